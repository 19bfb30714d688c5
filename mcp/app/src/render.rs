//! Rendering: every response has one text rendering ([`Render::text`]) and one JSON
//! rendering ([`Render::json`], its serde serialisation); the adapters only choose which.
//! The pieces responses share live here: the page of an answer as JSON ([`AnswerPage`]),
//! its values typed (a number with no fraction is an integer: a count is `12812`, not
//! `12812.0`), and the snapshot an answer read ([`SnapshotInfo`]).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq};
use strata_eval::Node;
use strata_eval::Value;
use strata_eval::{Answer, Cell, Cut};
use strata_store::Snapshot;

use crate::fit::{self, Measure};

/// A response: one text rendering, and one JSON rendering (its serialisation).
pub trait Render: Serialize {
    /// The response as a person (or an agent) reads it.
    fn text(&self) -> String;

    /// The response as JSON.
    fn json(&self) -> serde_json::Value {
        // A response holds no map with non-string keys and no float that JSON cannot
        // write (those become null), so serialising cannot fail.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The JSON rendering, pretty-printed.
    fn json_text(&self) -> String {
        serde_json::to_string_pretty(&self.json()).unwrap_or_default()
    }
}

/// The snapshot an answer was read from: its batch sequence number and that batch's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SnapshotInfo {
    /// The batch sequence number.
    pub seq: u64,
    /// The labels of the last batch committed.
    pub labels: std::collections::BTreeMap<String, String>,
}

impl SnapshotInfo {
    /// What `snap` was read at.
    pub fn of(snap: &Snapshot) -> SnapshotInfo {
        SnapshotInfo {
            seq: snap.seq(),
            labels: snap
                .last_batch()
                .map(|b| b.labels.clone())
                .unwrap_or_default(),
        }
    }
}

/// A page of an answer and the bytes its rendering may take, serialised as `columns`,
/// `rows` (arrays of values), `witnesses` (per row, the trees of its premises), `total`,
/// `offset` and `next` (the page token to continue with, or null), with `facts_left_out`
/// (per row) when a witness was bounded and `cut` when rows or values were left out to fit
/// the budget; flattened into the responses that answer rows. A page that names SCIP
/// symbols (`AnswerPage::name_symbols`) writes its witness nodes by name, without their
/// `values`, and adds `symbols`, from each name to the symbol it stands for. Each
/// rendering is fitted to the budget in its own measure ([`Measure`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AnswerPage {
    /// The page, whole.
    pub answer: Answer,
    /// The most bytes the page's rendering may take (what the response's other parts leave
    /// of the answer's budget).
    pub max_bytes: u64,
    /// The answer's whole budget, which a cut names.
    pub budget: u64,
    /// The page with its SCIP symbols by name, for the text rendering
    /// ([`AnswerPage::name_symbols`]).
    named: Option<crate::names::Named>,
    /// The source lines of the page's cited sites ([`AnswerPage::show_context`]).
    context: Option<crate::source::Excerpts>,
}

/// Bytes kept from an answer's budget for what a response writes around the page: its
/// keys, the snapshot, the work, the notes.
const FRAME: u64 = 256;

impl AnswerPage {
    /// The page `answer` within `budget` bytes, less what `around` (the response's other
    /// parts, as JSON) takes.
    pub fn new(answer: Answer, budget: u64, around: &impl Serialize) -> AnswerPage {
        let around = serde_json::to_string_pretty(around).map_or(0, |s| s.len() as u64);
        AnswerPage {
            answer,
            max_bytes: budget.saturating_sub(around + FRAME),
            budget,
            named: None,
            context: None,
        }
    }

    /// Writes the text rendering with SCIP symbols by name (`Model.save()`), and the
    /// definition sites of the rows' symbols read from `source` after the rows
    /// ([`crate::names`]); the JSON keeps every value whole.
    pub(crate) fn name_symbols(&mut self, source: &dyn strata_eval::FactSource) {
        self.named = crate::names::named(&self.answer, source);
    }

    /// Shows the source lines of the page's cited sites as `plan` asks, within half the
    /// page's bytes ([`crate::source`]).
    pub(crate) fn show_context(
        &mut self,
        source: &dyn strata_eval::FactSource,
        plan: &crate::source::ContextPlan,
    ) {
        self.context = crate::source::excerpts(&self.answer, source, plan, self.max_bytes / 2);
    }

    /// The page's JSON for `answer` (the page, or a candidate of it being fitted).
    fn json_of<'a>(&'a self, answer: &'a Answer) -> PageJson<'a> {
        PageJson {
            answer,
            named: self.named.as_ref().map(|n| &n.shown),
            context: self.context.as_ref(),
        }
    }

    /// The page fitted to its share of the budget in `measure`, its cut naming the whole
    /// budget: the text in its own measure, less the context's lines; the JSON as it is
    /// written, context and symbol table included.
    fn fitted(&self, measure: Measure) -> Answer {
        match measure {
            Measure::Text => {
                let context = self.context.as_ref().map_or(0, |c| c.text().len() as u64);
                fit::page::text(
                    &self.answer,
                    self.max_bytes.saturating_sub(context),
                    self.budget,
                )
            }
            Measure::Json => fit::page::json(&self.answer, self.budget, &|a| {
                fit::pretty_bytes_within(&self.json_of(a), self.max_bytes).is_some()
            }),
        }
    }

    /// The page as its rendering in `measure` shows it: the rows kept within the budget,
    /// and the cut saying what was left out (none when it all fits), as the text or the
    /// JSON says it.
    pub fn shown(&self, measure: Measure) -> Answer {
        let (Some(named), Measure::Text) = (&self.named, measure) else {
            return self.fitted(measure);
        };
        let mut sites = String::new();
        crate::names::write_sites(named, &mut sites);
        let max = self.max_bytes.saturating_sub(sites.len() as u64);
        fit::page::text(&named.answer, max, self.budget)
    }

    /// The page's text, fitted to the budget.
    pub fn text(&self) -> String {
        let context = self.context.as_ref().map(|c| c.text()).unwrap_or_default();
        let Some(named) = &self.named else {
            let mut text = self.fitted(Measure::Text).text();
            text.push_str(&context);
            return text;
        };
        let mut sites = String::new();
        crate::names::write_sites(named, &mut sites);
        let max = self
            .max_bytes
            .saturating_sub((sites.len() + context.len()) as u64);
        let mut text = fit::page::text(&named.answer, max, self.budget).text();
        text.push_str(&sites);
        text.push_str(&context);
        text
    }
}

impl Serialize for AnswerPage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.fitted(Measure::Json);
        self.json_of(&a).serialize(s)
    }
}

/// A page's JSON, as [`AnswerPage`] writes it, for one fitted answer: its witnesses by name
/// and a symbol table when the page names SCIP symbols (`named`, from each symbol to its
/// name), and the context's excerpts.
struct PageJson<'a> {
    answer: &'a Answer,
    named: Option<&'a HashMap<String, String>>,
    context: Option<&'a crate::source::Excerpts>,
}

impl Serialize for PageJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.answer;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("columns", &a.columns)?;
        let rows: Vec<Vec<CellJson<'_>>> = a
            .rows
            .iter()
            .map(|r| r.cells.iter().map(CellJson).collect())
            .collect();
        m.serialize_entry("rows", &rows)?;
        match self.named {
            None => {
                let witnesses: Vec<Vec<NodeJson<'_>>> = a
                    .rows
                    .iter()
                    .map(|r| r.witness.iter().map(NodeJson).collect())
                    .collect();
                m.serialize_entry("witnesses", &witnesses)?;
            }
            Some(names) => {
                let witnesses: Vec<Vec<NamedNodeJson<'_>>> = a
                    .rows
                    .iter()
                    .map(|r| r.witness.iter().map(|n| NamedNodeJson(n, names)).collect())
                    .collect();
                m.serialize_entry("witnesses", &witnesses)?;
                m.serialize_entry("symbols", &symbol_table(a, names))?;
            }
        }
        m.serialize_entry("total", &a.total)?;
        m.serialize_entry("offset", &a.offset)?;
        m.serialize_entry("next", &a.token().map(|t| t.to_string()))?;
        if a.rows.iter().any(|r| r.facts_left_out > 0) {
            let left: Vec<u64> = a.rows.iter().map(|r| r.facts_left_out).collect();
            m.serialize_entry("facts_left_out", &left)?;
        }
        if a.rows.iter().any(|r| r.facts_unbuilt > 0) {
            let unbuilt: Vec<u64> = a.rows.iter().map(|r| r.facts_unbuilt).collect();
            m.serialize_entry("facts_unbuilt", &unbuilt)?;
        }
        if let Some(c) = self.context {
            m.serialize_entry("context", &c.json())?;
        }
        if let Some(cut) = &a.cut {
            m.serialize_entry("cut", &CutJson(cut, &a.columns))?;
        }
        m.end()
    }
}

/// What fitting left out, as JSON: `{"max_bytes", "rows_left_out", "values": [{"row",
/// "column", "kept", "total", "unit"}]}`, columns by name.
struct CutJson<'a>(&'a Cut, &'a [String]);

impl Serialize for CutJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (cut, columns) = (self.0, self.1);
        let values: Vec<serde_json::Value> = cut
            .values
            .iter()
            .map(|v| {
                serde_json::json!({
                    "row": v.row,
                    "column": columns.get(v.column),
                    "kept": v.kept,
                    "total": v.total,
                    "unit": v.unit.to_string(),
                })
            })
            .collect();
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("max_bytes", &cut.max_bytes)?;
        m.serialize_entry("rows_left_out", &cut.rows_left_out)?;
        m.serialize_entry("values", &values)?;
        m.end()
    }
}

/// A value as JSON: text a string, a number with no fraction an integer, any other number
/// a float, absent `null`.
pub struct ValueJson<'a>(pub &'a Value);

/// The largest magnitude below which every integer is exact in an `f64` (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

impl Serialize for ValueJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Absent => s.serialize_none(),
            Value::Number(n) if n.fract() == 0.0 && n.abs() <= EXACT => {
                // Exact: |n| <= 2^53 fits an i64 with no rounding.
                #[allow(clippy::cast_possible_truncation)]
                s.serialize_i64(*n as i64)
            }
            Value::Number(n) if n.is_finite() => s.serialize_f64(*n),
            Value::Number(_) => s.serialize_none(),
            Value::Text(t) => s.serialize_str(t),
        }
    }
}

struct CellJson<'a>(&'a Cell);

impl Serialize for CellJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Cell::Value(v) => ValueJson(v).serialize(s),
            Cell::List(vs) => {
                let mut seq = s.serialize_seq(Some(vs.len()))?;
                for v in vs {
                    seq.serialize_element(&ValueJson(v))?;
                }
                seq.end()
            }
        }
    }
}

/// A witness tree as JSON: `{"fact": "rel(\"a\", 1)", "relation", "values", "children"}`,
/// and `flat` (the levels it had) for a tree written flat.
struct NodeJson<'a>(&'a Node);

impl Serialize for NodeJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut fact = String::new();
        n.write_fact(&mut fact);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("fact", &fact)?;
        m.serialize_entry("relation", &n.relation)?;
        let values: Vec<ValueJson<'_>> = n.values.iter().map(ValueJson).collect();
        m.serialize_entry("values", &values)?;
        let children: Vec<NodeJson<'_>> = n.children.iter().map(NodeJson).collect();
        m.serialize_entry("children", &children)?;
        if let Some(levels) = n.flat {
            m.serialize_entry("flat", &levels)?;
        }
        m.end()
    }
}

/// A witness tree of a page that names SCIP symbols, as JSON: `{"fact":
/// "call_site(\"Model.save()\", ...)", "relation", "children"}` (and `flat`). Its fact names
/// each symbol as the text does, and the page's `symbols` table maps each name to the
/// symbol, so a node carries no `values`: they would repeat the fact with every symbol
/// written whole, which is most of such a page's bytes.
struct NamedNodeJson<'a>(&'a Node, &'a HashMap<String, String>);

impl Serialize for NamedNodeJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (n, names) = (self.0, self.1);
        let named = Node {
            relation: n.relation.clone(),
            values: n
                .values
                .iter()
                .map(|v| match v {
                    Value::Text(t) => names
                        .get(&**t)
                        .map_or_else(|| v.clone(), |s| Value::Text(s.as_str().into())),
                    v => v.clone(),
                })
                .collect(),
            children: Vec::new(),
            flat: None,
        };
        let mut fact = String::new();
        named.write_fact(&mut fact);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("fact", &fact)?;
        m.serialize_entry("relation", &n.relation)?;
        let children: Vec<NamedNodeJson<'_>> =
            n.children.iter().map(|c| NamedNodeJson(c, names)).collect();
        m.serialize_entry("children", &children)?;
        if let Some(levels) = n.flat {
            m.serialize_entry("flat", &levels)?;
        }
        m.end()
    }
}

/// Each name the witnesses of `a` show and the SCIP symbol it stands for, by name.
fn symbol_table<'a>(
    a: &'a Answer,
    names: &'a HashMap<String, String>,
) -> BTreeMap<&'a str, &'a str> {
    let mut table = BTreeMap::new();
    for r in &a.rows {
        let mut stack: Vec<&Node> = r.witness.iter().collect();
        while let Some(n) = stack.pop() {
            for v in &n.values {
                if let Value::Text(t) = v
                    && let Some(name) = names.get(&**t)
                {
                    table.insert(name.as_str(), &**t);
                }
            }
            stack.extend(&n.children);
        }
    }
    table
}

/// `why: X matched nothing` and `hint: ...` lines after an answer's text, as a response
/// has them.
pub(crate) fn notes(text: &mut String, why: Option<&str>, hint: Option<&str>) {
    if let Some(why) = why {
        text.push_str("\nwhy: ");
        text.push_str(why);
    }
    if let Some(hint) = hint {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
}

/// `s` for a count other than one.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SAVE: &str = "scip-python python django 5.1 `django.db.models.base`/Model#save().";
    const ASAVE: &str = "scip-python python django 5.1 `django.db.models.base`/Model#asave().";

    fn node(relation: &str, values: Vec<Value>, children: Vec<Node>) -> Node {
        Node {
            relation: relation.into(),
            values,
            children,
            flat: None,
        }
    }

    /// A page of the callers of `Model.save()`: its one row and its call-site witness.
    fn callers_page(caller_row: &str) -> AnswerPage {
        let site = node(
            "call_site",
            vec![
                Value::text(SAVE),
                Value::text(ASAVE),
                Value::text("django/db/models/base.py"),
                Value::Number(930.0),
            ],
            Vec::new(),
        );
        let top = node(
            "code.callers",
            vec![Value::text(SAVE), Value::text(ASAVE)],
            vec![site],
        );
        let answer = Answer {
            columns: vec!["c".into()],
            rows: vec![strata_eval::Row {
                cells: vec![Cell::Value(Value::text(caller_row))],
                witness: vec![top],
                facts_left_out: 0,
                facts_unbuilt: 0,
            }],
            offset: 0,
            total: 1,
            snapshot: None,
            witness_facts: Some(64),
            cut: None,
        };
        let mut page = AnswerPage::new(answer, 80_000, &());
        page.name_symbols(&strata_eval::MemorySource::new());
        page
    }

    #[test]
    fn issue_32_named_json_witnesses_cite_names_and_a_symbol_table() {
        let j = serde_json::to_value(callers_page(ASAVE)).unwrap();
        // The row keeps the symbol whole, for a program to bind.
        assert_eq!(j["rows"], serde_json::json!([[ASAVE]]));
        let top = &j["witnesses"][0][0];
        assert_eq!(
            top["fact"],
            r#"code.callers("Model.save()", "Model.asave()")"#
        );
        assert_eq!(top["relation"], "code.callers");
        assert!(top.get("values").is_none(), "{top}");
        let site = &top["children"][0];
        assert_eq!(
            site["fact"],
            r#"call_site("Model.save()", "Model.asave()", "django/db/models/base.py", 930)"#
        );
        assert_eq!(
            j["symbols"],
            serde_json::json!({"Model.save()": SAVE, "Model.asave()": ASAVE})
        );
    }

    #[test]
    fn issue_32_two_symbols_of_one_name_stay_whole() {
        // Two symbols whose short and qualified names are both `a.C.m()` (two versions of
        // one package): naming either would make the symbol table ambiguous.
        let one = "scip-python python pkg 1 `a`/C#m().";
        let two = "scip-python python pkg 2 `a`/C#m().";
        let page = |caller: &str| {
            let mut p = callers_page(caller);
            let w = &mut p.answer.rows[0].witness[0];
            w.values[0] = Value::text(one);
            w.children[0].values[0] = Value::text(two);
            p.name_symbols(&strata_eval::MemorySource::new());
            serde_json::to_value(p).unwrap()
        };
        let j = page(ASAVE);
        let top = &j["witnesses"][0][0];
        assert_eq!(
            top["fact"],
            format!(r#"code.callers("{one}", "Model.asave()")"#)
        );
        assert_eq!(j["symbols"], serde_json::json!({"Model.asave()": ASAVE}));
        // A plain text value equal to a name does not stop the naming.
        let j = page("Model.asave()");
        assert_eq!(j["symbols"], serde_json::json!({"Model.asave()": ASAVE}));
    }

    #[test]
    fn whole_numbers_are_integers() {
        let j = |v: Value| serde_json::to_value(ValueJson(&v)).unwrap();
        assert_eq!(j(Value::Number(12812.0)), serde_json::json!(12812));
        assert!(j(Value::Number(12812.0)).is_i64());
        assert_eq!(j(Value::Number(-3.0)), serde_json::json!(-3));
        assert_eq!(j(Value::Number(1.5)), serde_json::json!(1.5));
        assert_eq!(j(Value::Number(1e300)), serde_json::json!(1e300));
        assert_eq!(j(Value::Number(f64::NAN)), serde_json::Value::Null);
        assert_eq!(j(Value::Absent), serde_json::Value::Null);
        assert_eq!(j(Value::text("x")), serde_json::json!("x"));
    }
}
