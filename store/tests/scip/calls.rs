//! An independent answer to the `code` module's call-site questions: from a reading of a
//! SCIP index (`reading.rs`, not the store's decoder), each reference's innermost enclosing
//! global definition, and from it `call_site` or `other_site`.

#![allow(dead_code)]

use std::collections::BTreeSet;

use crate::reading::Reading;

/// (callee, caller, path, line).
pub type Site = (String, String, String, i64);

/// The holder of a reference no definition encloses.
pub const ABSENT: &str = "absent";

pub fn global(s: &str) -> bool {
    !s.is_empty() && !s.starts_with("local ")
}

/// Whether a symbol can be a caller, from its last descriptor's suffix alone: a method
/// (`name().`), a term (`name.`) or a macro (`name!`); never a type (`#`), namespace (`/`),
/// type parameter (`[x]`), parameter (`(x)`) or meta (`:`). The suffix is the last character
/// of the symbol whatever the name's escaping.
pub fn can_call(sym: &str) -> bool {
    matches!(sym.as_bytes().last(), Some(b'.' | b'!'))
}

/// The repository an index's documents are stored under: its project root's last segment.
pub fn repo(r: &Reading) -> String {
    r.project_root
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The index's call sites and other sites.
#[derive(Default)]
pub struct Sites {
    pub call: BTreeSet<Site>,
    pub other: BTreeSet<Site>,
}

/// Every reference's innermost enclosing global definition (the latest to start of the
/// ranges holding it, `start <= at < end`; of two starting together, the shorter), by brute
/// force over the document's definitions. A reference whose holder is the symbol itself
/// (recursion) is an other site held by itself: a definition is not its own caller.
pub fn sites(r: &Reading) -> Sites {
    let repo = repo(r);
    let mut out = Sites::default();
    for doc in &r.docs {
        let path = format!("{repo}/{}", doc.path);
        let defs: Vec<_> = doc
            .occs
            .iter()
            .filter(|o| global(&o.symbol) && o.roles & 1 != 0)
            .filter_map(|o| o.enclosing.map(|e| (e, o.symbol.as_str())))
            .collect();
        for o in doc
            .occs
            .iter()
            .filter(|o| global(&o.symbol) && o.roles & 1 == 0)
        {
            let line = o.start.0 + 1;
            let inner = defs
                .iter()
                .filter(|((s, e), _)| *s <= o.start && o.start < *e)
                .max_by(|a, b| a.0.0.cmp(&b.0.0).then(b.0.1.cmp(&a.0.1)));
            match inner {
                None => {
                    out.other
                        .insert((o.symbol.clone(), ABSENT.to_owned(), path.clone(), line));
                }
                Some((_, holder)) => {
                    let site = (o.symbol.clone(), (*holder).to_owned(), path.clone(), line);
                    if can_call(holder) && *holder != o.symbol {
                        out.call.insert(site);
                    } else {
                        out.other.insert(site);
                    }
                }
            }
        }
    }
    out
}
