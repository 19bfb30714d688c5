//! The memory this process may use, as the machine and its limits give it: the memory
//! available (`MemAvailable` of `/proc/meminfo`), the process's own limits (`RLIMIT_AS`,
//! `RLIMIT_DATA`, read from `/proc/self/limits`), and its cgroup's (`memory.max` of cgroup
//! v2, `memory.limit_in_bytes` of v1, the least of its cgroup and every ancestor), and the
//! default memory cap of one evaluation computed from them ([`memory_budget`], a pure
//! function of the readings, so its arithmetic is tested without the machine).
//!
//! The cap is sized so that every heavy evaluation at once, each at its cap, cannot make the
//! allocator fail: an allocation refused under `prlimit --as` or a cgroup limit aborts the
//! process (Rust's allocation failure is not an error an evaluation could return), so the
//! only safe answer is a cap that cannot get there.

use std::path::Path;

/// What a machine's memory is taken to be when it cannot be read (`/proc/meminfo` is
/// Linux's): 8 GiB.
pub const MEMORY_UNKNOWN: u64 = 8 << 30;

/// What is left out of a resident limit (`MemAvailable`, a cgroup's) for the process
/// itself, beside its evaluations: the store's page cache (64 MiB a file at most), the
/// dictionary, sessions and answers being written: 256 MiB.
pub const RESIDENT_ROOM: u64 = 256 << 20;

/// What is left out of an address-space limit (`RLIMIT_AS`, `RLIMIT_DATA`) for the process
/// itself: the address space is reserved, not used, so it counts every thread's stack and
/// every allocator arena's reservation (64 MiB each) and the mapped `find` index: 1 GiB.
pub const VIRTUAL_ROOM: u64 = 1 << 30;

/// The least memory cap of an evaluation: 64 MiB.
pub const BUDGET_MIN: u64 = 64 << 20;

/// Readings of the memory this process may use; `None` where there is no such limit, or it
/// cannot be read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryReadings {
    /// The memory available for new work: `MemAvailable` (else `MemTotal`) in bytes.
    pub available: Option<u64>,
    /// The soft `RLIMIT_AS`: the most address space the process may map.
    pub address_space: Option<u64>,
    /// The soft `RLIMIT_DATA`: the most private writable memory it may map.
    pub data: Option<u64>,
    /// The least memory limit of its cgroup and the cgroup's ancestors.
    pub cgroup: Option<u64>,
}

impl MemoryReadings {
    /// The readings of this process, now (on other systems than Linux, none).
    pub fn read() -> MemoryReadings {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        MemoryReadings {
            available: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|m| meminfo_available(&m)),
            address_space: rlimit(&limits, "Max address space"),
            data: rlimit(&limits, "Max data size"),
            cgroup: cgroup_limit(Path::new("/sys/fs/cgroup")),
        }
    }

    /// The memory the evaluations may share: the least of the readings, each less the room
    /// kept for the process itself ([`RESIDENT_ROOM`] of a resident limit,
    /// [`VIRTUAL_ROOM`] of an address-space limit); [`MEMORY_UNKNOWN`] less the resident room
    /// when nothing could be read. 0 when a limit leaves no room at all.
    pub fn usable(&self) -> u64 {
        let resident = [self.available, self.cgroup]
            .into_iter()
            .flatten()
            .map(|l| l.saturating_sub(RESIDENT_ROOM));
        let virtual_ = [self.address_space, self.data]
            .into_iter()
            .flatten()
            .map(|l| l.saturating_sub(VIRTUAL_ROOM));
        let available = self.available.unwrap_or(MEMORY_UNKNOWN);
        resident
            .chain(virtual_)
            .chain([available.saturating_sub(RESIDENT_ROOM)])
            .min()
            .unwrap_or(0)
    }
}

/// The memory cap of one evaluation for `heavy_calls` of them at once, from `readings`:
/// [`MemoryReadings::usable`] / (2 × heavy_calls + 1), at least [`BUDGET_MIN`]. Each heavy
/// evaluation gets two shares, since for a moment it may hold twice what its cap counts
/// (a round's merge buffers beside the relation merged into; the answer's page), and one
/// share is left for everything else the calls hold (light calls, the store's reads).
pub fn memory_budget(readings: &MemoryReadings, heavy_calls: usize) -> u64 {
    let shares = (heavy_calls.max(1) as u64)
        .saturating_mul(2)
        .saturating_add(1);
    (readings.usable() / shares).max(BUDGET_MIN)
}

/// The memory cap of one evaluation when none is given, for `heavy_calls` at once:
/// [`memory_budget`] of this process's [`MemoryReadings`].
pub fn default_max_memory(heavy_calls: usize) -> u64 {
    memory_budget(&MemoryReadings::read(), heavy_calls)
}

/// The memory available for new work on this machine: `MemAvailable` of `/proc/meminfo`
/// (else `MemTotal`), or [`MEMORY_UNKNOWN`] where that cannot be read.
pub fn available_memory() -> u64 {
    MemoryReadings::read().available.unwrap_or(MEMORY_UNKNOWN)
}

/// `MemAvailable` (else `MemTotal`) of a `/proc/meminfo` text, in bytes.
fn meminfo_available(info: &str) -> Option<u64> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    };
    field("MemAvailable:").or_else(|| field("MemTotal:"))
}

/// The soft limit named `name` (`Max address space`) of a `/proc/self/limits` text, in
/// bytes; `None` when unlimited or not there.
fn rlimit(limits: &str, name: &str) -> Option<u64> {
    let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
    rest.split_whitespace().next()?.parse().ok()
}

/// A cgroup limit file's value: `None` for `max` (v2) or a value so large it means none
/// (v1 writes 2^63 less a page).
fn limit_value(text: &str) -> Option<u64> {
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 62).then_some(v)
}

/// The least memory limit of this process's cgroup and its ancestors, under the cgroup
/// mount `root`: v2's `memory.max` (under `root` or `root/unified`), v1's
/// `memory/memory.limit_in_bytes`, at each level from the cgroup `/proc/self/cgroup` names
/// up to the mount's root (inside a container the named path may not exist; its root is
/// the container's cgroup).
fn cgroup_limit(root: &Path) -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroup_limit_in(root, &own, &|p| std::fs::read_to_string(p).ok())
}

/// [`cgroup_limit`] over the `/proc/self/cgroup` text `own`, reading files with `read`.
fn cgroup_limit_in(root: &Path, own: &str, read: &dyn Fn(&Path) -> Option<String>) -> Option<u64> {
    let mut places: Vec<(std::path::PathBuf, &str)> = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            places.push((root.join(rel), "memory.max"));
            places.push((root.join("unified").join(rel), "memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            places.push((root.join("memory").join(rel), "memory.limit_in_bytes"));
        }
    }
    let mut least: Option<u64> = None;
    for (dir, file) in places {
        let mut at = Some(dir.as_path());
        while let Some(d) = at {
            if !d.starts_with(root) {
                break;
            }
            if let Some(v) = read(&d.join(file)).as_deref().and_then(limit_value) {
                least = Some(least.map_or(v, |l| l.min(v)));
            }
            at = d.parent();
        }
    }
    least
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn issue_30_budget_takes_the_least_limit_with_room_for_the_process() {
        // The case of the issue: 7.6 GiB available, `prlimit --as=8000000000`, two heavy
        // slots. Before, each slot was given 7.6 GiB / 3; now the address-space limit less
        // its room, over five shares: two evaluations at twice their cap, and the room,
        // stay under the limit.
        let r = MemoryReadings {
            available: Some(7_600_000_000),
            address_space: Some(8_000_000_000),
            data: None,
            cgroup: None,
        };
        let budget = memory_budget(&r, 2);
        assert_eq!(budget, (8_000_000_000 - VIRTUAL_ROOM) / 5);
        assert!(2 * 2 * budget + VIRTUAL_ROOM <= 8_000_000_000);

        // Nothing but MemAvailable: its room is the resident one.
        let plain = MemoryReadings {
            available: Some(20 * GIB),
            ..MemoryReadings::default()
        };
        assert_eq!(memory_budget(&plain, 1), (20 * GIB - RESIDENT_ROOM) / 3);
        // A cgroup limit below the machine's memory wins; RLIMIT_DATA likewise.
        let cg = MemoryReadings {
            cgroup: Some(4 * GIB),
            ..plain
        };
        assert_eq!(memory_budget(&cg, 2), (4 * GIB - RESIDENT_ROOM) / 5);
        let data = MemoryReadings {
            data: Some(3 * GIB),
            ..cg
        };
        assert_eq!(memory_budget(&data, 2), (3 * GIB - VIRTUAL_ROOM) / 5);
        // Nothing readable: the assumed 8 GiB.
        assert_eq!(
            memory_budget(&MemoryReadings::default(), 1),
            (MEMORY_UNKNOWN - RESIDENT_ROOM) / 3
        );
        // A limit smaller than the room: the least budget, not an underflow.
        let tiny = MemoryReadings {
            address_space: Some(512 << 20),
            ..plain
        };
        assert_eq!(tiny.usable(), 0);
        assert_eq!(memory_budget(&tiny, 16), BUDGET_MIN);
        // No heavy gate given counts as one.
        assert_eq!(memory_budget(&plain, 0), memory_budget(&plain, 1));
    }

    #[test]
    fn readings_parse_meminfo_limits_and_cgroups() {
        let meminfo = "MemTotal:       24683568 kB\nMemFree: 1 kB\nMemAvailable:   20721460 kB\n";
        assert_eq!(meminfo_available(meminfo), Some(20_721_460 * 1024));
        assert_eq!(meminfo_available("MemTotal: 4 kB\n"), Some(4096));
        assert_eq!(meminfo_available("nothing"), None);

        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max data size             unlimited            unlimited            bytes\n\
                      Max address space         8000000000           8000000000           bytes\n";
        assert_eq!(rlimit(limits, "Max address space"), Some(8_000_000_000));
        assert_eq!(rlimit(limits, "Max data size"), None);

        let files: HashMap<PathBuf, &str> = [
            // v1: the named cgroup's limit and its parent's; the root says none.
            ("/cg/memory/a/b/memory.limit_in_bytes", "6442450944\n"),
            ("/cg/memory/a/memory.limit_in_bytes", "4294967296\n"),
            ("/cg/memory/memory.limit_in_bytes", "9223372036854771712\n"),
            // v2: `max` at the leaf, a limit at the root.
            ("/cg/x/memory.max", "max\n"),
            ("/cg/memory.max", "5368709120\n"),
        ]
        .into_iter()
        .map(|(p, v)| (PathBuf::from(p), v))
        .collect();
        let read = |p: &Path| files.get(p).map(|v| (*v).to_owned());
        let root = Path::new("/cg");
        assert_eq!(
            cgroup_limit_in(root, "4:memory:/a/b\n1:cpu:/\n", &read),
            Some(4 * GIB)
        );
        assert_eq!(cgroup_limit_in(root, "0::/x\n", &read), Some(5 * GIB));
        assert_eq!(cgroup_limit_in(root, "4:memory:/gone\n", &read), None);
        assert_eq!(cgroup_limit_in(root, "", &read), None);
    }
}
