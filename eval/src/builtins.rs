//! The language's builtins, once for the engine and the answer stage: comparisons, the text
//! tests (`str.contains`, `str.glob`, ...), and the aggregates' arithmetic.
//!
//! The engine compares and aggregates terms, decoding values only where it must; the answer
//! stage compares and aggregates values. Both come here for what the language defines: a
//! number is never equal to or ordered against a text, nothing compares with `absent`, `sum`
//! adds numbers in ascending order (so the float sum does not depend on the order solutions
//! came in) and refuses a text, `min` and `max` skip `absent`, and `list(...)` is a goal's
//! column only.
//!
//! The naive evaluator (the test oracle) has its own implementations on purpose.

use std::cmp::Ordering;

use crate::data::value::Value;
use crate::ir::Builtin;
use crate::ops::{AggFunc, CmpOp};

/// Why a builtin could not give a value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BuiltinError {
    /// An aggregate met a value it cannot take.
    #[error("{0}")]
    Aggregate(String),
    /// `str.match` was given a pattern that is not a regular expression.
    #[error("str.match: {0}")]
    Regex(regex::Error),
}

/// Whether `a` and `b` are a number and a text: never ordered against each other.
pub(crate) fn mixed(a: &Value, b: &Value) -> bool {
    matches!(
        (a, b),
        (Value::Number(_), Value::Text(_)) | (Value::Text(_), Value::Number(_))
    )
}

/// Whether `op` holds of two values ordered `ord`.
pub(crate) fn holds(op: CmpOp, ord: Ordering) -> bool {
    match op {
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
    }
}

/// A comparison of two values as the language defines it: numbers by value, text bytewise,
/// a number never equal or ordered against a text, anything against `absent` false.
pub(crate) fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    if *a == Value::Absent || *b == Value::Absent {
        return false;
    }
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        _ if mixed(a, b) => false,
        _ => holds(op, a.cmp(b)),
    }
}

/// Whether text builtin `b` holds of `s` and pattern `p`; `regex` compiles `str.match`'s
/// pattern (the engine caches them). `absent(?x)` is not a text test: false here.
pub(crate) fn text_holds(
    b: &Builtin,
    s: &str,
    p: &str,
    regex: impl FnOnce(&str) -> Result<bool, BuiltinError>,
) -> Result<bool, BuiltinError> {
    Ok(match b {
        Builtin::Contains => s.contains(p),
        Builtin::Prefix => s.starts_with(p),
        Builtin::Suffix => s.ends_with(p),
        Builtin::Glob => glob(s, p),
        Builtin::Match => regex(p)?,
        Builtin::Absent => false,
    })
}

/// `*` matches any run of characters, `?` any one; everything else itself.
pub(crate) fn glob(s: &str, pattern: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if j < p.len() && (p[j] == '?' || p[j] == s[i]) {
            i += 1;
            j += 1;
        } else if j < p.len() && p[j] == '*' {
            star = Some((j, i));
            j += 1;
        } else if let Some((sj, si)) = star {
            j = sj + 1;
            i = si + 1;
            star = Some((sj, si + 1));
        } else {
            return false;
        }
    }
    p[j..].iter().all(|&c| c == '*')
}

/// A number as an aggregate gives it: `-0` is `0`.
pub(crate) fn number(n: f64) -> f64 {
    if n == 0.0 { 0.0 } else { n }
}

/// `sum` of values: the numbers added in ascending order, `absent` skipped, a text refused.
pub(crate) fn sum(values: impl IntoIterator<Item = Value>) -> Result<f64, BuiltinError> {
    let mut nums = Vec::new();
    for v in values {
        match v {
            Value::Number(n) => nums.push(n),
            Value::Absent => {}
            Value::Text(s) => {
                return Err(BuiltinError::Aggregate(format!(
                    "sum adds numbers, but one value is the text {s:?}"
                )));
            }
        }
    }
    nums.sort_by(f64::total_cmp);
    Ok(number(nums.iter().sum()))
}

/// The error of `list(...)` anywhere but a goal's columns.
pub(crate) fn list_outside_goal() -> BuiltinError {
    BuiltinError::Aggregate(
        "list(...) makes a list, which only a goal's columns can hold".to_owned(),
    )
}

/// `min` (else `max`) of the values that are not `absent`, each with what it came with
/// (the first of equal values); none when there is none.
pub(crate) fn extreme<T, E>(
    min: bool,
    items: impl IntoIterator<Item = Result<(Value, T), E>>,
) -> Result<Option<(Value, T)>, E> {
    let mut best: Option<(Value, T)> = None;
    for item in items {
        let (v, t) = item?;
        if v == Value::Absent {
            continue;
        }
        let better = best
            .as_ref()
            .is_none_or(|(b, _)| if min { v < *b } else { v > *b });
        if better {
            best = Some((v, t));
        }
    }
    Ok(best)
}

/// An aggregate of values (one per distinct solution); `list` is not a value.
pub(crate) fn aggregate(
    func: AggFunc,
    distinct: bool,
    mut values: Vec<Value>,
) -> Result<Value, BuiltinError> {
    if distinct {
        values.sort();
        values.dedup();
    }
    Ok(match func {
        AggFunc::Count => Value::Number(number(values.len() as f64)),
        AggFunc::Sum => Value::Number(sum(values)?),
        AggFunc::Min | AggFunc::Max => {
            let items = values.into_iter().map(|v| Ok((v, ())));
            extreme::<(), BuiltinError>(func == AggFunc::Min, items)?
                .map_or(Value::Absent, |(v, ())| v)
        }
        AggFunc::List => return Err(list_outside_goal()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("src/cli.rs", "src/*.rs"));
        assert!(glob("src/cli.rs", "*cli*"));
        assert!(glob("abc", "a?c"));
        assert!(!glob("abc", "a?d"));
        assert!(glob("", "*"));
        assert!(!glob("a", ""));
        assert!(glob("aXbXc", "a*b*c"));
    }

    #[test]
    fn numbers_and_texts_never_order() {
        let (n, t) = (Value::Number(1.0), Value::text("a"));
        assert!(!compare(CmpOp::Lt, &n, &t) && !compare(CmpOp::Gt, &n, &t));
        assert!(compare(CmpOp::Ne, &n, &t) && !compare(CmpOp::Eq, &n, &t));
        assert!(!compare(CmpOp::Eq, &Value::Absent, &Value::Absent));
    }

    #[test]
    fn sums_refuse_text_and_skip_absent() {
        assert_eq!(sum([Value::Number(1.5), Value::Absent]), Ok(1.5));
        assert!(sum([Value::text("x")]).is_err());
        assert_eq!(
            aggregate(AggFunc::Min, false, vec![Value::Absent, Value::Number(2.0)]),
            Ok(Value::Number(2.0))
        );
    }
}
