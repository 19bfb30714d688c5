//! The operators a program names: comparisons ([`CmpOp`]) and aggregate functions
//! ([`AggFunc`]). A leaf every stage shares: the syntax tree writes them as parsed, the IR
//! carries them (`ir::CmpOp`, `ir::AggFunc`), and the executor reads them from the IR, so
//! no stage reaches back into the front end for them.

use std::fmt;

/// A comparison operator.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// The operator that holds exactly when this one does not (`<` and `>=`, `=` and `!=`).
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An aggregate function.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AggFunc {
    /// `count`: how many values (0 of nothing).
    Count,
    /// `sum`: their sum (0 of nothing).
    Sum,
    /// `min`: the least (`absent` of nothing).
    Min,
    /// `max`: the greatest (`absent` of nothing).
    Max,
    /// `list`: all of them, in answer order.
    List,
}

impl AggFunc {
    /// The function's keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::List => "list",
        }
    }

    /// The function a keyword names, if it names one.
    pub fn from_keyword(word: &str) -> Option<AggFunc> {
        Some(match word {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "list" => AggFunc::List,
            _ => return None,
        })
    }
}

impl fmt::Display for AggFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
