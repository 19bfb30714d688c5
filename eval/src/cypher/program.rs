//! The Strata program a Cypher query compiles to, while it is being built: terms, literals,
//! conjunctions (one rule body each), and their rendering as LANGUAGE.md writes them.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A term of a literal.
#[derive(Clone, Debug, PartialEq)]
pub enum T {
    /// `?name`.
    Var(String),
    /// `"text"`.
    Str(String),
    /// A number.
    Num(f64),
    /// `absent`.
    Absent,
    /// `_`.
    Wild,
}

impl T {
    /// The variable's name, if the term is one.
    pub fn var(&self) -> Option<&str> {
        match self {
            T::Var(v) => Some(v),
            _ => None,
        }
    }
}

/// A literal of a body.
#[derive(Clone, Debug, PartialEq)]
pub enum L {
    /// `rel(args)` or `not rel(args)`.
    Atom {
        /// The relation.
        rel: String,
        /// Its arguments.
        args: Vec<T>,
        /// Under `not`.
        neg: bool,
    },
    /// The node-label atom at this index of the conjunction's `labels`, rendered last so the
    /// columns a later property reads are filled in.
    Label(usize),
    /// `a op b`.
    Cmp(&'static str, T, T),
    /// A builtin test: `str.prefix(a, b)`.
    Test(&'static str, Vec<T>),
    /// `?result = count(?var) : { body }`: the body's solutions, per value of the variables
    /// it shares with the rest.
    Count {
        /// The variable the count binds.
        result: String,
        /// `count(distinct ...)`.
        distinct: bool,
        /// The variable counted.
        var: String,
        /// The literals inside the braces.
        body: Vec<L>,
    },
}

/// One conjunction: the body of one rule (or of the goal).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conj {
    /// The literals, in order.
    pub lits: Vec<L>,
    /// The label atoms: relation and arguments.
    pub labels: Vec<(String, Vec<T>)>,
    /// The Cypher variables that are null in this conjunction (an OPTIONAL MATCH that found
    /// nothing).
    pub absent: BTreeSet<String>,
}

impl Conj {
    /// Adds `other`'s literals, label atoms and nulls after this one's.
    pub fn merge(&mut self, other: &Conj) {
        let base = self.labels.len();
        self.labels.extend(other.labels.iter().cloned());
        for l in &other.lits {
            self.lits.push(match l {
                L::Label(i) => L::Label(base + i),
                l => l.clone(),
            });
        }
        self.absent.extend(other.absent.iter().cloned());
    }

    /// The variables positive literals bind, in order of first appearance.
    pub fn bound(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |args: &[T]| {
            for a in args {
                if let T::Var(v) = a
                    && !out.contains(v)
                {
                    out.push(v.clone());
                }
            }
        };
        for l in &self.lits {
            match l {
                L::Atom {
                    args, neg: false, ..
                } => push(args),
                L::Label(i) => {
                    if let Some((_, args)) = self.labels.get(*i) {
                        push(args);
                    }
                }
                L::Count { result, .. } => push(&[T::Var(result.clone())]),
                _ => {}
            }
        }
        out
    }

    /// Every variable the literals use, positive or not.
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut add = |args: &[T]| {
            out.extend(args.iter().filter_map(|a| a.var().map(str::to_owned)));
        };
        for l in &self.lits {
            match l {
                L::Atom { args, .. } | L::Test(_, args) => add(args),
                L::Label(i) => {
                    if let Some((_, args)) = self.labels.get(*i) {
                        add(args);
                    }
                }
                L::Cmp(_, a, b) => add(&[a.clone(), b.clone()]),
                L::Count { result, .. } => add(&[T::Var(result.clone())]),
            }
        }
        out
    }

    /// The body as text: literals joined by `, `.
    pub fn render(&self) -> String {
        let parts: Vec<String> = self.lits.iter().map(|l| self.literal(l)).collect();
        parts.join(", ")
    }

    fn literal(&self, l: &L) -> String {
        match l {
            L::Atom { rel, args, neg } => {
                format!("{}{}", if *neg { "not " } else { "" }, atom(rel, args))
            }
            L::Label(i) => self
                .labels
                .get(*i)
                .map_or_else(String::new, |(rel, args)| atom(rel, args)),
            L::Cmp(op, a, b) => format!("{} {op} {}", term(a), term(b)),
            L::Test(name, args) => atom(name, args),
            L::Count {
                result,
                distinct,
                var,
                body,
            } => {
                let inner: Vec<String> = body.iter().map(|l| self.literal(l)).collect();
                format!(
                    "?{result} = count({}?{var}) : {{ {} }}",
                    if *distinct { "distinct " } else { "" },
                    inner.join(", ")
                )
            }
        }
    }
}

/// `rel(a, b)`.
pub fn atom(rel: &str, args: &[T]) -> String {
    let args: Vec<String> = args.iter().map(term).collect();
    format!("{rel}({})", args.join(", "))
}

/// A term as the language writes it.
pub fn term(t: &T) -> String {
    match t {
        T::Var(v) => format!("?{v}"),
        T::Str(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            out
        }
        T::Num(n) => number(*n),
        T::Absent => "absent".to_owned(),
        T::Wild => "_".to_owned(),
    }
}

/// A number in the shortest form the language reads back to the same value.
pub fn number(n: f64) -> String {
    if n == 0.0 {
        return "0".to_owned();
    }
    let mut s = String::new();
    let _ = write!(s, "{n}");
    s
}
