//! The syntax tree of the Cypher a query may be written in: reading clauses, at most one
//! `WITH` stage, and `RETURN`.

use crate::front::ast::Span;

/// A name as written, with its place.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

/// A whole read query.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// `MATCH`, `OPTIONAL MATCH` and `WITH` clauses, in order.
    pub clauses: Vec<Clause>,
    /// The `RETURN` clause.
    pub ret: Return,
}

/// A reading clause or a `WITH` stage.
#[derive(Clone, Debug, PartialEq)]
pub enum Clause {
    /// `[OPTIONAL] MATCH patterns [WHERE cond]`.
    Match(Match),
    /// `WITH items [WHERE cond]`.
    With(With),
}

/// `[OPTIONAL] MATCH p1, p2 [WHERE cond]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// `OPTIONAL MATCH`.
    pub optional: bool,
    /// The comma-separated patterns.
    pub patterns: Vec<Pattern>,
    /// The `WHERE` condition.
    pub cond: Option<Expr>,
    /// The clause's keyword.
    pub span: Span,
}

/// A path pattern: a node, then steps of a relationship and a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// The first node.
    pub start: NodePat,
    /// Each relationship and the node it leads to.
    pub steps: Vec<(RelPat, NodePat)>,
    /// Where the pattern is.
    pub span: Span,
}

/// `(v:Label {key: value})`.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePat {
    /// The variable, if named.
    pub var: Option<Ident>,
    /// The labels (all must hold).
    pub labels: Vec<Ident>,
    /// The property map.
    pub props: Vec<(Ident, Expr)>,
    /// Where the node is.
    pub span: Span,
}

/// Which way a relationship points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// `-[]->`
    Right,
    /// `<-[]-`
    Left,
    /// `-[]-`
    Both,
}

/// `-[r:A|B*1..3]->`.
#[derive(Clone, Debug, PartialEq)]
pub struct RelPat {
    /// The variable, if named.
    pub var: Option<Ident>,
    /// The types, any of which may hold (none: any type).
    pub types: Vec<Ident>,
    /// The direction.
    pub dir: Dir,
    /// Variable length: the least and the most hops (`*` is 1 and none).
    pub length: Option<(u32, Option<u32>)>,
    /// A property map, which relationships cannot have here.
    pub props: Vec<(Ident, Expr)>,
    /// Where the relationship is.
    pub span: Span,
}

/// `WITH items [WHERE cond]`.
#[derive(Clone, Debug, PartialEq)]
pub struct With {
    /// The items passed on.
    pub items: Vec<Item>,
    /// The `WHERE` after it.
    pub cond: Option<Expr>,
    /// The keyword.
    pub span: Span,
}

/// `RETURN [DISTINCT] items [ORDER BY ...] [SKIP n] [LIMIT n]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    /// `DISTINCT` (answers are sets either way).
    pub distinct: bool,
    /// The items.
    pub items: Vec<Item>,
    /// `ORDER BY` keys, each with `DESC`.
    pub order: Vec<(Expr, bool)>,
    /// `SKIP n`.
    pub skip: Option<u64>,
    /// `LIMIT n`.
    pub limit: Option<u64>,
    /// The keyword.
    pub span: Span,
}

/// An item of `RETURN` or `WITH`: an expression and its alias.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The expression.
    pub expr: Expr,
    /// `AS name`.
    pub alias: Option<Ident>,
    /// The expression as written, which names the column when there is no alias.
    pub text: String,
}

impl Item {
    /// The column's name: the alias, or the expression as written.
    pub fn name(&self) -> &str {
        self.alias.as_ref().map_or(&self.text, |a| &a.name)
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A string test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrOp {
    /// `STARTS WITH`
    Starts,
    /// `ENDS WITH`
    Ends,
    /// `CONTAINS`
    Contains,
    /// `=~`, a whole-string match
    Regex,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// Text.
    Str(String),
    /// A number.
    Num(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Lit, Span),
    /// `$name`.
    Param(Ident),
    /// A variable.
    Var(Ident),
    /// `v.key`.
    Prop(Ident, Ident),
    /// `[a, b]`.
    List(Vec<Expr>, Span),
    /// `a op b`.
    Cmp(Cmp, Box<Expr>, Box<Expr>, Span),
    /// `a STARTS WITH b` and the like.
    Str(StrOp, Box<Expr>, Box<Expr>, Span),
    /// `a IN b`.
    In(Box<Expr>, Box<Expr>, Span),
    /// `a IS NULL` (false) or `a IS NOT NULL` (true).
    IsNull(Box<Expr>, bool, Span),
    /// `a AND b`.
    And(Box<Expr>, Box<Expr>),
    /// `a OR b`.
    Or(Box<Expr>, Box<Expr>),
    /// `NOT a`.
    Not(Box<Expr>, Span),
    /// `f(args)`, `f(DISTINCT x)`, `count(*)` (no args, `star`).
    Call {
        /// The function's name.
        name: Ident,
        /// `DISTINCT`.
        distinct: bool,
        /// `*`.
        star: bool,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// A pattern as a predicate: `(a)-[:IMPORTS]->(b)`.
    Pattern(Pattern),
}

impl Expr {
    /// Where the expression is (its first token, for operators their operator).
    pub fn span(&self) -> Span {
        match self {
            Expr::Lit(_, s) | Expr::List(_, s) | Expr::Not(_, s) => *s,
            Expr::Param(i) | Expr::Var(i) => i.span,
            Expr::Prop(v, _) => v.span,
            Expr::Cmp(_, a, _, _)
            | Expr::Str(_, a, _, _)
            | Expr::In(a, _, _)
            | Expr::IsNull(a, _, _)
            | Expr::And(a, _)
            | Expr::Or(a, _) => a.span(),
            Expr::Call { name, .. } => name.span,
            Expr::Pattern(p) => p.span,
        }
    }
}
