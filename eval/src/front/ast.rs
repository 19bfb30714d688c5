//! The syntax tree of Strata's query language, as `crate::front::parse` builds it.
//!
//! Every node carries a [`Span`]: the byte range of the source text it was parsed from, from
//! which [`Span::line_col`] computes a line and column for error messages. The tree is purely
//! syntactic: names are not resolved, arities are not checked and safety is not enforced (the
//! checker does that).
//!
//! Every node prints back as source text through [`fmt::Display`], in a canonical layout (one
//! rule a line, single spaces), so that parsing the printed text gives the same tree, spans
//! aside.

use std::fmt;

use crate::data::value::{Value, format_number};
pub use crate::ops::{AggFunc, CmpOp};

/// A byte range `start .. end` of the source text a node or an error refers to.
///
/// Spans produced by the parser always lie within the source and on character boundaries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Span {
    /// The byte offset of the first byte.
    pub start: usize,
    /// The byte offset just past the last byte (equal to `start` for an empty span).
    pub end: usize,
}

impl Span {
    /// The span `start .. end` (swapped if given in the wrong order).
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start.min(end),
            end: start.max(end),
        }
    }

    /// The empty span at byte offset `at`: a place between two characters.
    pub fn empty(at: usize) -> Span {
        Span { start: at, end: at }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The length of the span in bytes.
    pub fn len(self) -> usize {
        self.end - self.start
    }

    /// Whether the span is empty.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The 1-based line and column of the span's start in `source`. Columns count characters
    /// (a tab is one character). An offset past the end of `source`, or inside a character, is
    /// moved back to the nearest character boundary.
    pub fn line_col(self, source: &str) -> (usize, usize) {
        let at = floor_boundary(source, self.start);
        let before = source.get(..at).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
        (line, column)
    }
}

/// The largest character boundary of `source` at or before `at`.
pub(crate) fn floor_boundary(source: &str, at: usize) -> usize {
    let mut at = at.min(source.len());
    while at > 0 && !source.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A relation name as written: one or more segments separated by `.` (`imports`,
/// `deps.depends_on`, `str.contains`).
#[derive(Clone, PartialEq, Debug)]
pub struct Name {
    /// The name as written, dots included.
    pub text: String,
    /// Where the name is written.
    pub span: Span,
}

impl Name {
    /// The name's segments: `deps.depends_on` has `deps` and `depends_on`.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.text.split('.')
    }

    /// The last segment: the member's own name within its module.
    pub fn last_segment(&self) -> &str {
        self.text.rsplit('.').next().unwrap_or(&self.text)
    }

    /// Whether the name has a module path (contains a `.`).
    pub fn is_qualified(&self) -> bool {
        self.text.contains('.')
    }

    /// Whether the member is private to its module: its last segment starts with `_`.
    pub fn is_private(&self) -> bool {
        self.last_segment().starts_with('_')
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A variable, `?name`.
#[derive(Clone, PartialEq, Debug)]
pub struct Var {
    /// The name without the `?`.
    pub name: String,
    /// Where the variable is written, `?` included.
    pub span: Span,
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "?{}", self.name)
    }
}

/// A term: an argument of an atom or a side of a comparison.
#[derive(Clone, PartialEq, Debug)]
pub enum Term {
    /// A variable, `?name`.
    Var(Var),
    /// The wildcard `_`: it matches anything and binds nothing; two `_` never join.
    Wildcard(Span),
    /// A string constant, with its escapes resolved.
    Text {
        /// The text, unescaped.
        value: String,
        /// Where the string is written, quotes included.
        span: Span,
    },
    /// A number constant (finite; `-0` is read as `0`).
    Number {
        /// The number's value.
        value: f64,
        /// Where the number is written.
        span: Span,
    },
    /// The constant `absent`: a field the source did not state.
    Absent(Span),
}

impl Term {
    /// Where the term is written.
    pub fn span(&self) -> Span {
        match self {
            Term::Var(v) => v.span,
            Term::Wildcard(span)
            | Term::Text { span, .. }
            | Term::Number { span, .. }
            | Term::Absent(span) => *span,
        }
    }

    /// The variable, if the term is one.
    pub fn as_var(&self) -> Option<&Var> {
        match self {
            Term::Var(v) => Some(v),
            _ => None,
        }
    }

    /// The constant's value, if the term is a constant (a string, a number or `absent`).
    pub fn constant(&self) -> Option<Value> {
        match self {
            Term::Text { value, .. } => Some(Value::Text(value.clone())),
            Term::Number { value, .. } => Some(Value::Number(*value)),
            Term::Absent(_) => Some(Value::Absent),
            Term::Var(_) | Term::Wildcard(_) => None,
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Var(v) => v.fmt(f),
            Term::Wildcard(_) => f.write_str("_"),
            Term::Text { value, .. } => write_quoted(f, value),
            Term::Number { value, .. } => f.write_str(&format_number(*value)),
            Term::Absent(_) => f.write_str("absent"),
        }
    }
}

/// Writes `text` as a string literal: in double quotes, with `"` and `\` escaped.
pub fn write_quoted(f: &mut impl fmt::Write, text: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in text.chars() {
        if c == '"' || c == '\\' {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}

/// An aggregate, `count(?x)` or `sum(distinct ?x)`.
#[derive(Clone, PartialEq, Debug)]
pub struct Aggregate {
    /// The function.
    pub func: AggFunc,
    /// Whether `distinct` is written.
    pub distinct: bool,
    /// The variable aggregated over.
    pub var: Var,
    /// Where the aggregate is written, from its keyword to its `)`.
    pub span: Span,
}

impl fmt::Display for Aggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let distinct = if self.distinct { "distinct " } else { "" };
        write!(f, "{}({distinct}{})", self.func, self.var)
    }
}

/// An atom in a body or a goal: `relation(term, ...)`.
#[derive(Clone, PartialEq, Debug)]
pub struct Atom {
    /// The relation.
    pub relation: Name,
    /// The arguments, in order.
    pub args: Vec<Term>,
    /// Where the atom is written, from its name to its `)`.
    pub span: Span,
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.relation)?;
        write_list(f, &self.args, ", ")?;
        f.write_str(")")
    }
}

/// An argument of a rule's head: a term or an aggregate.
#[derive(Clone, PartialEq, Debug)]
pub enum HeadArg {
    /// A term.
    Term(Term),
    /// An aggregate: the head's plain variables are the group key.
    Aggregate(Aggregate),
}

impl HeadArg {
    /// Where the argument is written.
    pub fn span(&self) -> Span {
        match self {
            HeadArg::Term(t) => t.span(),
            HeadArg::Aggregate(a) => a.span,
        }
    }
}

impl fmt::Display for HeadArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadArg::Term(t) => t.fmt(f),
            HeadArg::Aggregate(a) => a.fmt(f),
        }
    }
}

/// A rule's head: `relation(arg, ...)`, where an argument may be an aggregate.
#[derive(Clone, PartialEq, Debug)]
pub struct Head {
    /// The relation the rule defines.
    pub relation: Name,
    /// The arguments, in order.
    pub args: Vec<HeadArg>,
    /// Where the head is written, from its name to its `)`.
    pub span: Span,
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.relation)?;
        write_list(f, &self.args, ", ")?;
        f.write_str(")")
    }
}

/// A comparison literal, `term op term`. It tests and never binds.
#[derive(Clone, PartialEq, Debug)]
pub struct Comparison {
    /// The left side.
    pub left: Term,
    /// The operator.
    pub op: CmpOp,
    /// Where the operator is written.
    pub op_span: Span,
    /// The right side.
    pub right: Term,
    /// Where the comparison is written.
    pub span: Span,
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.left, self.op, self.right)
    }
}

/// An aggregate literal in a body: `?v = count(?t) : { literals }`.
#[derive(Clone, PartialEq, Debug)]
pub struct AggregateLiteral {
    /// The variable the aggregate's value is bound to.
    pub result: Var,
    /// The aggregate.
    pub aggregate: Aggregate,
    /// The literals the aggregate ranges over (never empty).
    pub body: Vec<Literal>,
    /// Where the literal is written, from the result variable to the `}`.
    pub span: Span,
}

impl fmt::Display for AggregateLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} : {{ ", self.result, self.aggregate)?;
        write_list(f, &self.body, ", ")?;
        f.write_str(" }")
    }
}

/// A literal of a body or a goal.
#[derive(Clone, PartialEq, Debug)]
pub enum Literal {
    /// A positive atom.
    Atom(Atom),
    /// `not atom`: negation as failure.
    Not {
        /// The negated atom.
        atom: Atom,
        /// Where the literal is written, from `not` to the atom's `)`.
        span: Span,
    },
    /// A comparison, `term op term`.
    Compare(Comparison),
    /// An aggregate literal, `?v = count(?t) : { literals }`.
    Aggregate(AggregateLiteral),
}

impl Literal {
    /// Where the literal is written.
    pub fn span(&self) -> Span {
        match self {
            Literal::Atom(a) => a.span,
            Literal::Not { span, .. } => *span,
            Literal::Compare(c) => c.span,
            Literal::Aggregate(a) => a.span,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Atom(a) => a.fmt(f),
            Literal::Not { atom, .. } => write!(f, "not {atom}"),
            Literal::Compare(c) => c.fmt(f),
            Literal::Aggregate(a) => a.fmt(f),
        }
    }
}

/// A rule, `head :- literals;`.
#[derive(Clone, PartialEq, Debug)]
pub struct Rule {
    /// The comment lines directly above the rule (no blank line between), each without its
    /// `#` and one following space, joined with `\n`; `None` when there are none. The doc of a
    /// relation is the doc of its first rule (see [`Module::doc`]).
    pub doc: Option<String>,
    /// The head.
    pub head: Head,
    /// The body (never empty).
    pub body: Vec<Literal>,
    /// Where the rule is written, from its head to its `;`.
    pub span: Span,
}

impl fmt::Display for Rule {
    /// Prints the rule on one line ending with `;`, preceded by its doc as comment lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(doc) = &self.doc {
            for line in doc.split('\n') {
                if line.is_empty() {
                    f.write_str("#\n")?;
                } else {
                    writeln!(f, "# {line}")?;
                }
            }
        }
        write!(f, "{} :- ", self.head)?;
        write_list(f, &self.body, ", ")?;
        f.write_str(";")
    }
}

/// A column of a goal, or a key of its `order by`: a variable or an aggregate.
#[derive(Clone, PartialEq, Debug)]
pub enum Column {
    /// A plain variable: with aggregates beside it, part of the group key.
    Var(Var),
    /// An aggregate over each group.
    Aggregate(Aggregate),
}

impl Column {
    /// Where the column is written.
    pub fn span(&self) -> Span {
        match self {
            Column::Var(v) => v.span,
            Column::Aggregate(a) => a.span,
        }
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Column::Var(v) => v.fmt(f),
            Column::Aggregate(a) => a.fmt(f),
        }
    }
}

/// A condition of `having`: `aggregate op term`.
#[derive(Clone, PartialEq, Debug)]
pub struct Having {
    /// The aggregate, computed per group.
    pub aggregate: Aggregate,
    /// The operator.
    pub op: CmpOp,
    /// Where the operator is written.
    pub op_span: Span,
    /// What the aggregate is compared with.
    pub value: Term,
    /// Where the condition is written.
    pub span: Span,
}

impl fmt::Display for Having {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.aggregate, self.op, self.value)
    }
}

/// A sort direction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Direction {
    /// Ascending, the default.
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// A key of `order by`: a column and a direction.
#[derive(Clone, PartialEq, Debug)]
pub struct OrderKey {
    /// The column sorted on.
    pub column: Column,
    /// The direction (`asc` when not written).
    pub direction: Direction,
    /// Where the key is written, direction included.
    pub span: Span,
}

impl fmt::Display for OrderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.column.fmt(f)?;
        if self.direction == Direction::Desc {
            f.write_str(" desc")?;
        }
        Ok(())
    }
}

/// The number given to `limit` or `offset`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RowCount {
    /// How many rows.
    pub value: u64,
    /// Where the number is written.
    pub span: Span,
}

/// A program's goal: `literals [=> columns] [having ...] [order by ...] [limit N] [offset N]`.
#[derive(Clone, PartialEq, Debug)]
pub struct Goal {
    /// The literals (never empty).
    pub body: Vec<Literal>,
    /// The columns after `=>` (never empty), or `None` without `=>`: then the answer has one
    /// column per goal variable, in order of first appearance.
    pub columns: Option<Vec<Column>>,
    /// The conditions of `having`, if any.
    pub having: Vec<Having>,
    /// The keys of `order by`, if any.
    pub order_by: Vec<OrderKey>,
    /// The `limit`, if any.
    pub limit: Option<RowCount>,
    /// The `offset`, if any.
    pub offset: Option<RowCount>,
    /// Where the goal is written, from its first literal to its end.
    pub span: Span,
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_list(f, &self.body, ", ")?;
        if let Some(columns) = &self.columns {
            f.write_str(" => ")?;
            write_list(f, columns, ", ")?;
        }
        if !self.having.is_empty() {
            f.write_str(" having ")?;
            write_list(f, &self.having, ", ")?;
        }
        if !self.order_by.is_empty() {
            f.write_str(" order by ")?;
            write_list(f, &self.order_by, ", ")?;
        }
        if let Some(limit) = self.limit {
            write!(f, " limit {}", limit.value)?;
        }
        if let Some(offset) = self.offset {
            write!(f, " offset {}", offset.value)?;
        }
        Ok(())
    }
}

/// A query program: rules, if any, then one goal.
#[derive(Clone, PartialEq, Debug)]
pub struct Program {
    /// The rules, in order.
    pub rules: Vec<Rule>,
    /// The goal.
    pub goal: Goal,
}

impl fmt::Display for Program {
    /// Prints one rule a line, then the goal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rule in &self.rules {
            writeln!(f, "{rule}")?;
        }
        self.goal.fmt(f)
    }
}

/// A module file: rules only, no goal. Its heads are bare names.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Module {
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

impl Module {
    /// The doc of `relation` (a bare name): the comment lines directly above its first rule.
    pub fn doc(&self, relation: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| r.head.relation.text == relation)
            .and_then(|r| r.doc.as_deref())
    }
}

impl fmt::Display for Module {
    /// Prints one rule a line, each ending with a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rule in &self.rules {
            writeln!(f, "{rule}")?;
        }
        Ok(())
    }
}

/// Writes `items` separated by `sep`.
fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        item.fmt(f)?;
    }
    Ok(())
}
