//! Qualified names of SCIP symbols: `scip-python python django 5.1
//! `django.db.models.base`/Model#save().` read as a person would, `django.db.models.base`,
//! `Model`, `save`, and how well a query names one (`Model.save`, `Model#save`,
//! `Model.save()`, `Model save`, `django.db.models.base.Model.save`).

/// The parts of a SCIP symbol's qualified name, owner chain first (a namespace's own dots
/// kept: `django.db.models.base`); `None` for a local symbol or a text that is no SCIP
/// symbol. Type parameters and parameters are left out but as the last descriptor.
pub(super) fn qualified(symbol: &str) -> Option<Vec<String>> {
    use crate::names::Kind;
    let descriptors = crate::names::descriptors(symbol)?;
    let last = descriptors.len() - 1;
    // A type parameter `[T]` or a parameter `(x)`: part of the name only as its last
    // descriptor (`parse().(version)` is `parse.version`, no `parse`).
    let parts: Vec<String> = descriptors
        .into_iter()
        .enumerate()
        .filter(|(i, (_, k))| *i == last || !matches!(k, Kind::Parameter | Kind::TypeParameter))
        .map(|(_, (name, _))| name)
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// A qualified name's parts as one dotted name: `django.db.models.base.Model.save`.
#[cfg(test)]
fn dotted(parts: &[String]) -> String {
    parts.join(".")
}

/// The segments of a query naming a symbol: split at `.`, `#`, `/`, `:` and spaces, with
/// backticks and trailing `()` dropped (`Model.save()` is `Model`, `save`); `None` when
/// it has none.
pub(super) fn query_segments(query: &str) -> Option<Vec<String>> {
    let segs: Vec<String> = query
        .split(|c: char| matches!(c, '.' | '#' | '/' | ':' | '!') || c.is_whitespace())
        .map(|s| {
            s.trim_matches(|c: char| matches!(c, '`' | '(' | ')' | '[' | ']'))
                .to_owned()
        })
        .filter(|s| !s.is_empty())
        .collect();
    (!segs.is_empty()).then_some(segs)
}

/// How well the query's segments name a symbol whose qualified name has `parts`, best
/// (lowest) first; `None` when they are no tail of it. The key: whether the query names
/// the whole name, whether its case differs, then how many parts the name has.
pub(super) fn name_rank(query: &[String], parts: &[String]) -> Option<(bool, bool, usize)> {
    let segs: Vec<&str> = parts
        .iter()
        .flat_map(|p| p.split(['.', '/']))
        .filter(|s| !s.is_empty())
        .collect();
    if query.len() > segs.len() {
        return None;
    }
    let tail = &segs[segs.len() - query.len()..];
    if !tail
        .iter()
        .zip(query)
        .all(|(s, q)| s.eq_ignore_ascii_case(q))
    {
        return None;
    }
    let same_case = tail.iter().zip(query).all(|(s, q)| s == q);
    Some((query.len() != segs.len(), !same_case, segs.len()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SAVE: &str = "scip-python python django 5.1 `django.db.models.base`/Model#save().";

    #[test]
    fn a_scip_symbol_reads_as_its_qualified_name() {
        assert_eq!(
            dotted(&qualified(SAVE).unwrap()),
            "django.db.models.base.Model.save"
        );
        assert_eq!(
            dotted(
                &qualified("scip-python python django 5.1 `django.db.models.base`/Model#").unwrap()
            ),
            "django.db.models.base.Model"
        );
        assert_eq!(
            dotted(&qualified("scip-typescript npm my  pkg 1.0 src/`a.ts`/f().(x)").unwrap()),
            "src.a.ts.f.x"
        );
        assert_eq!(
            dotted(&qualified("rust-analyzer cargo std 1.0 vec/Vec#[T]push().").unwrap()),
            "vec.Vec.push"
        );
        let param =
            qualified("scip-python python packaging 24.2 `packaging.version`/parse().(version)");
        assert_eq!(
            dotted(param.as_ref().unwrap()),
            "packaging.version.parse.version"
        );
        let q = query_segments("Version.parse").unwrap();
        assert!(name_rank(&q, &param.unwrap()).is_none());
        assert!(qualified("local 3").is_none());
        assert!(qualified("Model.save is called").is_none());
        assert!(qualified("plain").is_none());
    }

    #[test]
    fn every_form_of_the_name_names_it() {
        let parts = qualified(SAVE).unwrap();
        for q in [
            "Model.save",
            "Model#save",
            "Model.save()",
            "Model save",
            "save",
            "django.db.models.base.Model.save",
            "model.SAVE",
        ] {
            let segs = query_segments(q).unwrap();
            assert!(name_rank(&segs, &parts).is_some(), "{q}");
        }
        for q in ["Field.save", "Model.delete", "base.save"] {
            let segs = query_segments(q).unwrap();
            assert!(name_rank(&segs, &parts).is_none(), "{q}");
        }
        let full = query_segments("django.db.models.base.Model.save").unwrap();
        let short = query_segments("Model.save").unwrap();
        assert!(name_rank(&full, &parts) < name_rank(&short, &parts));
    }
}
