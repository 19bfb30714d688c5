//! The `find` tool over the server: the dictionary index it keeps in memory (read once,
//! extended as batches add texts), and the ranked matches it answers with the relations
//! and columns each appears in.

use std::sync::Arc;

use strata_store::Snapshot;
use strata_store::layout::DEFAULT_TIER;

use super::{Call, Server, ToolOutput, lower, snapshot_json};
use crate::args::FindArgs;
use crate::find;

/// How many matches `find` answers when the call does not say.
pub const FIND_LIMIT: u64 = 10;

/// The longest name `find` takes, in characters.
pub const FIND_MAX_CHARS: usize = 1000;

impl Server {
    /// The dictionary index as of `snap`: read once, then extended with what later batches
    /// added (the dictionary only grows).
    pub(super) fn find_index(&self, snap: &Snapshot) -> Result<Arc<find::Index>, String> {
        let mut cached = self
            .inner
            .finder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = cached.get_or_insert_with(Default::default);
        if index.len() < snap.text_count() {
            Arc::make_mut(index)
                .extend_from(snap)
                .map_err(|e| format!("find: {e}"))?;
        }
        Ok(index.clone())
    }

    /// Reads the dictionary into memory for `find` ahead of its first call; `strata serve`
    /// does this on a thread of its own at startup, so no agent waits for it.
    pub fn warm_find(&self) -> Result<(), String> {
        let snap = self
            .inner
            .store
            .snapshot()
            .map_err(|e| format!("find: {e}"))?;
        self.find_index(&snap).map(|_| ())
    }

    /// `find`: the stored text values a name may stand for, ranked, each with the
    /// relations and columns it appears in and how many rows.
    pub fn find(&self, a: &FindArgs) -> ToolOutput {
        self.find_in(&Call::plain("find"), a)
    }

    pub(super) fn find_in(&self, call: &Call, a: &FindArgs) -> ToolOutput {
        if self.host_base(call) {
            return ToolOutput::error(
                "find: this server's facts come from its host, and find reads only a Strata \
                 store's dictionary; use values to list what an argument holds",
            );
        }
        let name = a.name.trim();
        if name.is_empty() {
            return ToolOutput::error(
                "find: give a name (a part of one, a misspelled one or its words will do)",
            );
        }
        if name.chars().count() > FIND_MAX_CHARS {
            return ToolOutput::error(format!(
                "find: the name is longer than {FIND_MAX_CHARS} characters; give a part of it"
            ));
        }
        let store = &self.inner.store;
        let snap = match store.snapshot() {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(format!("find: {e}")),
        };
        // Count rows in every tier at the snapshot's batch.
        let mut tiers: Vec<&str> = snap
            .catalog()
            .relations
            .values()
            .map(|m| m.tier.as_str())
            .filter(|t| *t != DEFAULT_TIER)
            .collect();
        tiers.sort_unstable();
        tiers.dedup();
        let snap = if tiers.is_empty() {
            snap
        } else {
            let tiers: Vec<String> = tiers.into_iter().map(str::to_owned).collect();
            let names: Vec<&str> = tiers.iter().map(String::as_str).collect();
            match store.snapshot_with_tiers(&names) {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(format!("find: {e}")),
            }
        };
        let index = match self.find_index(&snap) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e),
        };
        let limit = lower(
            if a.limit == 0 { FIND_LIMIT } else { a.limit },
            self.inner.options.limit,
        );
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        // Keep spares for texts no live row holds any more.
        let keep = limit.saturating_mul(4).saturating_add(32);
        let (ranked, total) = index.search(name, snap.text_count(), keep);
        let mut matches = Vec::new();
        let mut text = String::new();
        for m in ranked {
            if matches.len() >= limit {
                break;
            }
            let uses = match snap.term_uses(strata_eval::Term::text(m.id)) {
                Ok(u) => u,
                Err(e) => return ToolOutput::error(format!("find: {e}")),
            };
            if uses.is_empty() {
                continue;
            }
            let value = index.text(m.id).unwrap_or_default();
            let mut quoted = String::new();
            strata_eval::witness::write_value(&strata_eval::Value::text(value), &mut quoted);
            let how = if m.kind == find::Kind::Fuzzy {
                format!(
                    "{} ({} edit{})",
                    m.kind.name(),
                    m.distance,
                    plural(m.distance.into())
                )
            } else {
                m.kind.name().to_owned()
            };
            text.push_str(&format!("{}. {quoted} {how}\n   ", matches.len() + 1));
            text.push_str(
                &uses
                    .iter()
                    .map(|u| {
                        format!(
                            "{}.{} {} row{}",
                            u.relation,
                            u.column_name,
                            u.rows,
                            plural(u.rows)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            text.push('\n');
            let mut j = serde_json::json!({
                "value": value,
                "match": m.kind.name(),
                "uses": uses
                    .iter()
                    .map(|u| serde_json::json!({
                        "relation": u.relation,
                        "column": u.column_name,
                        "position": u.column + 1,
                        "rows": u.rows,
                    }))
                    .collect::<Vec<_>>(),
            });
            if m.kind == find::Kind::Fuzzy {
                j["edits"] = m.distance.into();
            }
            matches.push(j);
        }
        if matches.is_empty() {
            text = format!(
                "no stored text matches \"{name}\"; values shows what one argument of a \
                 relation holds"
            );
        } else {
            text.push_str(&format!(
                "{} of {total} match{}",
                matches.len(),
                if total == 1 { "" } else { "es" }
            ));
        }
        let j = serde_json::json!({
            "name": name,
            "matches": matches,
            "total": total,
            "snapshot": snapshot_json(&snap),
        });
        ToolOutput {
            text,
            structured: Some(j),
            is_error: false,
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
