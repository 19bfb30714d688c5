//! Name resolution: what relation a name written in a query or a module stands for.
//!
//! In a query, a name is one of the query's own relations, a builtin, a base relation or a
//! public module member by its full dotted name. In a module, a bare name is first the
//! module's own member (`_step` in module `deps` is `deps._step`), then the root, as in a
//! query; the module's private members are usable by their full name too. An unknown name is
//! an error with "did you mean" ([`crate::front::suggest`]); a private member used outside its
//! module is an error naming the module's public relations.

use crate::front::ast::{Name, Span};
use crate::front::diagnostic::Diagnostic;
use crate::front::suggest::{Candidate, quoted_alternatives, suggest};
use crate::link::vocab::{BUILTINS, BuiltinSig, Vocabulary, builtin};

/// The fix for an unknown name with nothing close to suggest.
pub(crate) const SCHEMA_FIX: &str = "call schema for every relation and module a program can name";

/// A relation a program reads or defines (builtins are not relations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Target {
    /// A base relation (an index into the vocabulary's base relations).
    Base(usize),
    /// A module member (an index into the vocabulary's members).
    Member(usize),
    /// A relation the query's own rules define (an index into the query's relations).
    Local(usize),
}

/// What a name resolves to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Resolved {
    /// A relation.
    Rel(Target),
    /// A builtin predicate.
    Builtin(&'static BuiltinSig),
}

/// A relation a query's rules define: its bare name and its columns (from its first rule).
#[derive(Clone, Debug)]
pub(crate) struct LocalRel {
    /// The bare name.
    pub name: String,
    /// The columns.
    pub columns: Vec<String>,
}

/// Resolves names in one scope: a query (with its own relations) or a module.
pub(crate) struct Resolver<'a> {
    /// The vocabulary.
    pub vocab: &'a Vocabulary,
    /// The module the names are written in; `None` for a query.
    pub module: Option<usize>,
    /// The query's own relations (empty in a module).
    pub locals: &'a [LocalRel],
}

impl Resolver<'_> {
    /// What `name` stands for here.
    pub fn resolve(&self, name: &Name) -> Result<Resolved, Diagnostic> {
        let text = name.text.as_str();
        let v = self.vocab;
        if let Some(mi) = self.module
            && !name.is_qualified()
        {
            let full = format!("{}.{text}", v.modules[mi].path);
            if let Some(&i) = v.member_index.get(&full) {
                return Ok(Resolved::Rel(Target::Member(i)));
            }
        }
        if self.module.is_none()
            && let Some(i) = self.locals.iter().position(|l| l.name == text)
        {
            return Ok(Resolved::Rel(Target::Local(i)));
        }
        if let Some(b) = builtin(text) {
            return Ok(Resolved::Builtin(b));
        }
        if let Some(&i) = v.base_index.get(text) {
            return Ok(Resolved::Rel(Target::Base(i)));
        }
        if let Some(&i) = v.member_index.get(text) {
            let m = &v.members[i];
            if m.private && Some(m.module) != self.module {
                return Err(self.private_error(name, m.module));
            }
            return Ok(Resolved::Rel(Target::Member(i)));
        }
        Err(self.unknown(name))
    }

    /// A relation's columns.
    pub fn columns(&self, t: Target) -> &[String] {
        let v = self.vocab;
        match t {
            Target::Base(i) => v.base.get(i).map_or(&[], |r| &r.columns[..]),
            Target::Member(i) => v.members.get(i).map_or(&[], |m| &m.columns[..]),
            Target::Local(i) => self.locals.get(i).map_or(&[], |l| &l.columns[..]),
        }
    }

    fn private_error(&self, name: &Name, module: usize) -> Diagnostic {
        let v = self.vocab;
        let m = &v.modules[module];
        let public: Vec<&str> = m
            .members
            .iter()
            .map(|&i| &v.members[i])
            .filter(|x| !x.private)
            .map(|x| x.name.as_str())
            .collect();
        let fix = if public.is_empty() {
            format!("only the rules of module \"{}\" can use it", m.path)
        } else {
            format!(
                "use a public relation of module \"{}\": {}",
                m.path,
                public.join(", ")
            )
        };
        Diagnostic::new(
            format!("\"{}\" is private to module \"{}\"", name.text, m.path),
            name.span,
        )
        .with_fix(fix)
    }

    /// The error for a name that stands for nothing.
    fn unknown(&self, name: &Name) -> Diagnostic {
        let v = self.vocab;
        let text = name.text.as_str();
        let prefix = text.rsplit_once('.').map(|(p, _)| p);
        let context = match self.module {
            Some(mi) => Some(v.modules[mi].path.as_str()),
            None => prefix,
        };
        let found = suggest(text, context, &self.candidates());
        if !found.is_empty() {
            let alts = quoted_alternatives(&found);
            return Diagnostic::new(
                format!("unknown relation \"{text}\"; did you mean {alts}?"),
                name.span,
            )
            .with_fix(format!("did you mean {alts}?"));
        }
        let fix = match prefix.and_then(|p| v.modules.iter().find(|m| m.path == p)) {
            Some(m) => {
                let public: Vec<&str> = m
                    .members
                    .iter()
                    .map(|&i| &v.members[i])
                    .filter(|x| !x.private)
                    .map(|x| x.name.as_str())
                    .collect();
                if public.is_empty() {
                    format!("module \"{}\" has no public relations", m.path)
                } else {
                    format!("module \"{}\" has {}", m.path, public.join(", "))
                }
            }
            None => SCHEMA_FIX.to_owned(),
        };
        Diagnostic::new(format!("unknown relation \"{text}\""), name.span).with_fix(fix)
    }

    /// Every name that could be written here.
    fn candidates(&self) -> Vec<Candidate> {
        let v = self.vocab;
        let mut out = Vec::new();
        for l in self.locals {
            out.push(Candidate {
                written: l.name.clone(),
                full: l.name.clone(),
                module: None,
            });
        }
        for b in &BUILTINS {
            let name = b.builtin.name();
            out.push(Candidate {
                written: name.to_owned(),
                full: name.to_owned(),
                module: None,
            });
        }
        for r in &v.base {
            out.push(Candidate {
                written: r.name.clone(),
                full: r.name.clone(),
                module: None,
            });
        }
        for m in &v.members {
            let own = Some(m.module) == self.module;
            if m.private && !own {
                continue;
            }
            let path = &v.modules[m.module].path;
            let written = if own {
                m.name
                    .strip_prefix(path.as_str())
                    .and_then(|s| s.strip_prefix('.'))
                    .unwrap_or(&m.name)
                    .to_owned()
            } else {
                m.name.clone()
            };
            out.push(Candidate {
                written,
                full: m.name.clone(),
                module: Some(path.clone()),
            });
        }
        out
    }
}

/// A relation's full name (bare for a query's own relations).
pub(crate) fn target_name(v: &Vocabulary, locals: &[LocalRel], t: Target) -> String {
    match t {
        Target::Base(i) => v.base.get(i).map(|r| r.name.clone()),
        Target::Member(i) => v.members.get(i).map(|m| m.name.clone()),
        Target::Local(i) => locals.get(i).map(|l| l.name.clone()),
    }
    .unwrap_or_default()
}

/// The error for an atom or head of `sig` (`imports(src, dst)`) that takes `expected`
/// arguments but is given one per span of `args`; `whole` is the atom's span. The caret goes
/// under the first argument too many, or under the `)` when arguments are missing.
pub(crate) fn arity_error(sig: &str, expected: usize, args: &[Span], whole: Span) -> Diagnostic {
    let given = args.len();
    let span = match args.get(expected) {
        Some(s) => *s,
        None => Span::new(whole.end.saturating_sub(1), whole.end),
    };
    let takes = match expected {
        0 => "no arguments".to_owned(),
        1 => "1 argument".to_owned(),
        n => format!("{n} arguments"),
    };
    let fix = if expected == 0 {
        format!("write it with no arguments: {sig}")
    } else {
        format!("give it {takes}: {sig}")
    };
    Diagnostic::new(format!("{sig} takes {takes}, not {given}"), span).with_fix(fix)
}
