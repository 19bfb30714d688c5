//! Fitting a response to the answer's byte budget, in one place, for both renderings.
//!
//! A page of rows ([`page`]: query, cypher, values, ask) keeps its rows while they fit and
//! leaves the rest out, said so ([`strata_eval::Cut`]) with the page token to go on from;
//! a first row too big on its own is cut inside. Its text is measured as the text writes it
//! ([`Measure::Text`]), its JSON by writing it ([`Measure::Json`]).
//!
//! [`Fitted`]: a response that is not a page of rows (schema, look, values, find, explain).
//! Its parts are bounded by counts (relations listed, sample facts, values, matches), but a
//! stored text may be as long as a dump line (1 MiB) and a program explained as long as a
//! program (1 MiB), so counts alone do not bound the bytes. Past the budget, long strings
//! (JSON) or lines (text) are clipped, shorter and shorter, and as a last resort the last
//! items or lines are left out; what was done is said in the answer. A response within the
//! budget is rendered unchanged.

use serde::Serialize;

use crate::render::Render;

pub(crate) mod page;

/// Which rendering of a response a budget is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// The text rendering ([`Render::text`]).
    Text,
    /// The JSON rendering, pretty-printed ([`Render::json_text`]), an upper bound of the
    /// compact JSON an MCP call sends.
    Json,
}

/// The lengths, in bytes, long strings or lines are clipped to, tried in turn until the
/// rendering fits.
const CLIPS: [usize; 5] = [4_096, 1_024, 256, 96, 48];

/// A response and the most bytes its renderings may take.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted<R> {
    /// The response, whole.
    pub response: R,
    /// The most bytes its text, or its JSON pretty-printed, may take.
    pub max_bytes: u64,
}

impl<R> std::ops::Deref for Fitted<R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.response
    }
}

impl<R: Render> Serialize for Fitted<R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(s)
    }
}

impl<R: Render> Render for Fitted<R> {
    fn text(&self) -> String {
        fit_text(self.response.text(), self.max_bytes)
    }

    fn json(&self) -> serde_json::Value {
        fit_json(self.response.json(), self.max_bytes)
    }
}

/// `s` cut to at most `max` bytes at a character boundary, with `…` when cut.
fn clip(s: &str, max: usize) -> Option<String> {
    if s.len() <= max {
        return None;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}…", &s[..end]))
}

/// `text` within `max_bytes`: its longer lines clipped, then, if need be, its last lines
/// left out, with a last line saying so.
pub(crate) fn fit_text(text: String, max_bytes: u64) -> String {
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    if text.len() <= max {
        return text;
    }
    let original = text.len();
    for limit in CLIPS {
        let mut clipped = 0;
        let out: Vec<String> = text
            .lines()
            .map(|l| match clip(l, limit) {
                Some(c) => {
                    clipped += 1;
                    c
                }
                None => l.to_owned(),
            })
            .collect();
        let note = format!(
            "({clipped} lines clipped to {limit} bytes to fit the answer's budget of \
             {max_bytes} bytes; the whole answer is {original} bytes)"
        );
        let joined = out.join("\n");
        if joined.len() + note.len() < max {
            return format!("{joined}\n{note}");
        }
        if limit == CLIPS[CLIPS.len() - 1] {
            // Still too long: keep the first lines that fit.
            let said = |left_out: usize| {
                format!(
                    "({left_out} lines left out and long lines clipped to {limit} bytes to fit \
                     the answer's budget of {max_bytes} bytes; the whole answer is {original} \
                     bytes)"
                )
            };
            let mut kept = String::new();
            let mut left_out = out.len();
            for line in &out {
                if kept.len() + line.len() + 1 + said(left_out - 1).len() > max {
                    break;
                }
                kept.push_str(line);
                kept.push('\n');
                left_out -= 1;
            }
            kept.push_str(&said(left_out));
            return kept;
        }
    }
    text
}

/// Every string in `v` longer than `limit` bytes clipped; how many were.
fn clip_strings(v: &mut serde_json::Value, limit: usize) -> usize {
    match v {
        serde_json::Value::String(s) => match clip(s, limit) {
            Some(c) => {
                *s = c;
                1
            }
            None => 0,
        },
        serde_json::Value::Array(a) => a.iter_mut().map(|v| clip_strings(v, limit)).sum(),
        serde_json::Value::Object(o) => o.values_mut().map(|v| clip_strings(v, limit)).sum(),
        _ => 0,
    }
}

/// The most elements of any array in `v`, at any depth.
fn longest(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => a.len().max(a.iter().map(longest).max().unwrap_or(0)),
        serde_json::Value::Object(o) => o.values().map(longest).max().unwrap_or(0),
        _ => 0,
    }
}

/// Leaves out the second half of the first array in `v` holding `best` elements; how many
/// elements were left out.
fn halve(v: &mut serde_json::Value, best: usize) -> usize {
    match v {
        serde_json::Value::Array(a) if a.len() == best => {
            let keep = a.len() / 2;
            a.truncate(keep);
            best - keep
        }
        serde_json::Value::Array(a) => a
            .iter_mut()
            .find(|x| longest(x) == best)
            .map_or(0, |x| halve(x, best)),
        serde_json::Value::Object(o) => o
            .values_mut()
            .find(|x| longest(x) == best)
            .map_or(0, |x| halve(x, best)),
        _ => 0,
    }
}

/// The bytes of `value`'s JSON pretty-printed, or `None` past `cap` (it is written no
/// further than that).
pub(crate) fn pretty_bytes_within(value: &impl Serialize, cap: u64) -> Option<u64> {
    struct Count {
        bytes: u64,
        cap: u64,
    }
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.bytes += b.len() as u64;
            if self.bytes > self.cap {
                return Err(std::io::Error::other("past the budget"));
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, cap };
    serde_json::to_writer_pretty(&mut count, value).ok()?;
    Some(count.bytes)
}

fn pretty_len(v: &serde_json::Value) -> usize {
    serde_json::to_string_pretty(v).map_or(usize::MAX, |s| s.len())
}

/// `value` within `max_bytes` pretty-printed: its longer strings clipped, then, if need be,
/// elements left out of its longest arrays; an object gets a `fitted` entry saying what was
/// done.
pub(crate) fn fit_json(value: serde_json::Value, max_bytes: u64) -> serde_json::Value {
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let original = pretty_len(&value);
    if original <= max {
        return value;
    }
    // Room for the `fitted` entry itself.
    let room = max.saturating_sub(256);
    let mut v = value;
    let mut clipped = 0;
    let mut limit = CLIPS[0];
    for l in CLIPS {
        limit = l;
        clipped = clip_strings(&mut v, l);
        if pretty_len(&v) <= room {
            break;
        }
    }
    let mut left_out = 0;
    while pretty_len(&v) > room {
        let best = longest(&v);
        if best == 0 {
            break;
        }
        left_out += halve(&mut v, best);
    }
    if let serde_json::Value::Object(o) = &mut v {
        o.insert(
            "fitted".to_owned(),
            serde_json::json!({
                "max_bytes": max_bytes,
                "whole_bytes": original,
                "strings_clipped": clipped,
                "clipped_to_bytes": limit,
                "items_left_out": left_out,
            }),
        );
    }
    v
}

#[cfg(test)]
mod fitted_tests {
    use super::*;

    #[test]
    fn within_the_budget_nothing_changes() {
        let t = "a\nb".to_owned();
        assert_eq!(fit_text(t.clone(), 10), t);
        let j = serde_json::json!({"a": ["x", "y"]});
        assert_eq!(fit_json(j.clone(), 1_000), j);
    }

    #[test]
    fn long_lines_are_clipped_and_said_so() {
        let long = "é".repeat(100_000);
        let t = format!("head\n{long}\ntail");
        let out = fit_text(t, 10_000);
        assert!(out.len() <= 10_000, "{}", out.len());
        assert!(out.starts_with("head\n"));
        assert!(out.contains("\ntail\n"));
        assert!(out.contains("1 lines clipped to 4096 bytes"), "{out:.200}");
    }

    #[test]
    fn too_many_lines_are_left_out_and_said_so() {
        let t: Vec<String> = (0..10_000)
            .map(|i| format!("line {i} {}", "x".repeat(60)))
            .collect();
        let out = fit_text(t.join("\n"), 2_000);
        assert!(out.len() <= 2_000, "{}", out.len());
        assert!(out.starts_with("line 0 "));
        assert!(out.ends_with("bytes)"));
        assert!(out.contains("lines left out"), "{out}");
    }

    #[test]
    fn json_strings_are_clipped_then_arrays_cut() {
        let j = serde_json::json!({"facts": vec!["v".repeat(50_000); 3], "name": "n"});
        let out = fit_json(j, 8_000);
        assert!(pretty_len(&out) <= 8_000, "{}", pretty_len(&out));
        assert_eq!(out["name"], "n");
        assert_eq!(out["fitted"]["strings_clipped"], 3);
        assert_eq!(out["fitted"]["items_left_out"], 0);
        let many = serde_json::json!({"rows": (0..50_000).collect::<Vec<u32>>()});
        let out = fit_json(many, 4_000);
        assert!(pretty_len(&out) <= 4_000, "{}", pretty_len(&out));
        assert!(out["fitted"]["items_left_out"].as_u64().unwrap() > 49_000);
    }
}
