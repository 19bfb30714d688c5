//! The ingested code's own names for the bundled pack's examples: a busy file, its directory,
//! a method many functions call, its class, a type others implement, and one real symbol.
//! Chosen from the stored facts by counting, so the same database always gives the same.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use strata_eval::{FactSource, SourceError, Term, Value};

/// The names the pack template's placeholders stand for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// `{{FILE}}`: the document most other documents depend on.
    pub file: String,
    /// `{{DIR}}`: the directory that file lies in.
    pub dir: String,
    /// `{{METHOD}}`: the display name of the method called from the most places.
    pub method: String,
    /// `{{OWNER}}`: the display name of the type that method is a member of.
    pub owner: String,
    /// `{{TYPE}}`: the display name of the type most symbols implement.
    pub ty: String,
    /// `{{SYMBOL}}`: that method's SCIP symbol.
    pub symbol: String,
}

impl Sample {
    /// The template with every placeholder replaced. The names go into TOML strings and
    /// Datalog strings as they are: [`Sample::choose`] takes only names that need no escape,
    /// except the symbol, which is escaped for the TOML basic string it stands in.
    pub(crate) fn fill(&self, template: &str) -> String {
        let symbol = self.symbol.replace('\\', "\\\\").replace('"', "\\\\\\\"");
        template
            .replace("{{FILE}}", &self.file)
            .replace("{{DIR}}", &self.dir)
            .replace("{{METHOD}}", &self.method)
            .replace("{{OWNER}}", &self.owner)
            .replace("{{TYPE}}", &self.ty)
            .replace("{{SYMBOL}}", &symbol)
    }

    /// Picks the names from `source`'s SCIP relations; `None` when it holds no document.
    pub(crate) fn choose(source: &dyn FactSource) -> Result<Option<Sample>, SourceError> {
        let text = |t: Term| -> Result<Option<String>, SourceError> {
            Ok(match source.value(t)? {
                Value::Text(s) => Some(s.to_string()),
                _ => None,
            })
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 120
                && !s
                    .chars()
                    .any(|c| c.is_control() || matches!(c, '"' | '\\' | '\''))
        };

        // The file most documents depend on: distinct (definer, referrer) pairs.
        let mut definer: HashMap<Term, Term> = HashMap::new();
        scan(source, "defines", &mut |r| {
            definer.entry(r[1]).or_insert(r[0]);
        })?;
        let mut pairs: HashSet<(Term, Term)> = HashSet::new();
        scan(source, "references", &mut |r| {
            if let Some(&d) = definer.get(&r[1])
                && d != r[0]
            {
                pairs.insert((d, r[0]));
            }
        })?;
        let mut dependents: HashMap<Term, u64> = HashMap::new();
        for (d, _) in pairs {
            *dependents.entry(d).or_default() += 1;
        }
        let mut documents = Vec::new();
        scan(source, "document", &mut |r| documents.push(r[0]))?;
        let file = best(
            documents
                .iter()
                .map(|&d| (d, dependents.get(&d).copied().unwrap_or(0))),
            |t| text(t).map(|s| s.filter(|s| plain(s))),
        )?;
        let Some((file_term, file)) = file else {
            return Ok(None);
        };
        let mut dir = None;
        source.lookup("in_directory", &[(0, file_term)], &mut |r| {
            dir = Some(r[1]);
            ControlFlow::Break(())
        })?;
        let dir = match dir {
            Some(t) => text(t)?.filter(|s| plain(s)),
            None => None,
        }
        .unwrap_or_else(|| {
            file.rsplit_once('/')
                .map_or(file.clone(), |(d, _)| d.into())
        });

        // Display names and owners.
        let mut names: HashMap<Term, Term> = HashMap::new();
        scan(source, "symbol", &mut |r| {
            names.insert(r[0], r[2]);
        })?;
        let mut owner_of: HashMap<Term, Term> = HashMap::new();
        scan(source, "member_of", &mut |r| {
            owner_of.insert(r[0], r[1]);
        })?;
        let mut method_kind = HashSet::new();
        let mut type_kind = HashSet::new();
        scan(source, "descriptor", &mut |r| {
            match source.value(r[1]) {
                Ok(Value::Text(k)) if &*k == "Method" => method_kind.insert(r[0]),
                Ok(Value::Text(k)) if &*k == "Type" => type_kind.insert(r[0]),
                _ => false,
            };
        })?;
        let name = |t: Term| -> Result<Option<String>, SourceError> {
            match names.get(&t) {
                Some(&n) => Ok(text(n)?.filter(|s| plain(s))),
                None => Ok(None),
            }
        };

        // The method of a type called from the most call sites.
        let mut called: HashMap<Term, u64> = HashMap::new();
        scan(source, "call_site", &mut |r| {
            if method_kind.contains(&r[0])
                && owner_of.get(&r[0]).is_some_and(|o| type_kind.contains(o))
            {
                *called.entry(r[0]).or_default() += 1;
            }
        })?;
        let method = best(called.into_iter(), |m| {
            let (Some(n), Some(o)) = (name(m)?, owner_of.get(&m).map(|&o| name(o)).transpose()?)
            else {
                return Ok(None);
            };
            Ok(o.map(|o| (n, o)))
        })?;
        let (symbol, method, owner) = match method {
            Some((m, (n, o))) => (text(m)?.unwrap_or_default(), n, o),
            None => (String::new(), "main".into(), file_stem(&file)),
        };

        // The type most symbols implement, else the method's own type.
        let mut implemented: HashMap<Term, u64> = HashMap::new();
        scan(source, "implements", &mut |r| {
            *implemented.entry(r[1]).or_default() += 1;
        })?;
        let ty = best(implemented.into_iter(), name)?.map_or_else(|| owner.clone(), |(_, n)| n);
        Ok(Some(Sample {
            file,
            dir,
            method,
            owner,
            ty,
            symbol,
        }))
    }
}

/// Visits every row of `relation`; a relation the source lacks visits nothing.
fn scan(
    source: &dyn FactSource,
    relation: &str,
    visit: &mut dyn FnMut(&[Term]),
) -> Result<(), SourceError> {
    if source.relation(relation)?.is_none() {
        return Ok(());
    }
    source.scan(relation, &mut |r| {
        visit(r);
        ControlFlow::Continue(())
    })
}

/// The candidate with the highest count whose `show` gives a value (ties to the smaller
/// shown value, so the choice does not depend on term numbering), with that value.
fn best<T>(
    candidates: impl Iterator<Item = (Term, u64)>,
    show: impl Fn(Term) -> Result<Option<T>, SourceError>,
) -> Result<Option<(Term, T)>, SourceError>
where
    T: Ord,
{
    let mut ranked: Vec<(Term, u64)> = candidates.collect();
    ranked.sort_by_key(|c| std::cmp::Reverse(c.1));
    let mut out: Option<(u64, Term, T)> = None;
    for (t, n) in ranked {
        if let Some((top, _, _)) = &out
            && n < *top
        {
            break;
        }
        if let Some(v) = show(t)? {
            match &out {
                Some((_, _, w)) if *w <= v => {}
                _ => out = Some((n, t, v)),
            }
        }
    }
    Ok(out.map(|(_, t, v)| (t, v)))
}

/// `base` for `REPO/a/base.py`.
fn file_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name).to_owned()
}
