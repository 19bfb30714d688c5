//! An independent reading of a SCIP index for the tests: a small protobuf decoder of its own
//! (not the store's, not the `scip` crate) that keeps what the checks compare.

#![allow(dead_code)]

/// One occurrence: its symbol, roles, start (line, character), and enclosing range.
pub struct Occ {
    pub symbol: String,
    pub roles: u64,
    pub start: (i64, i64),
    pub enclosing: Option<((i64, i64), (i64, i64))>,
}

/// One document.
pub struct Doc {
    pub path: String,
    pub occs: Vec<Occ>,
    /// (symbol, implemented target) from the document's SymbolInformation.
    pub implements: Vec<(String, String)>,
    /// (symbol, SCIP kind number, 0 when unspecified) of each SymbolInformation.
    pub infos: Vec<(String, i32)>,
}

/// One index: its project root and documents.
pub struct Reading {
    pub project_root: String,
    pub docs: Vec<Doc>,
    /// (symbol, implemented target) from the index's external symbols.
    pub external_implements: Vec<(String, String)>,
    /// (symbol, SCIP kind number) of each external symbol.
    pub external_infos: Vec<(String, i32)>,
}

/// The fields of a message: (number, wire type, varint value or payload).
fn fields(mut b: &[u8]) -> Vec<(u64, u8, u64, &[u8])> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let tag = take_varint(&mut b);
        let (num, wt) = (tag >> 3, (tag & 7) as u8);
        match wt {
            0 => out.push((num, wt, take_varint(&mut b), &b[..0])),
            1 => {
                out.push((num, wt, 0, &b[..8]));
                b = &b[8..];
            }
            5 => {
                out.push((num, wt, 0, &b[..4]));
                b = &b[4..];
            }
            2 => {
                let len = take_varint(&mut b) as usize;
                out.push((num, wt, 0, &b[..len]));
                b = &b[len..];
            }
            _ => panic!("wire type {wt}"),
        }
    }
    out
}

fn take_varint(b: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[0];
        *b = &b[1..];
        v |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return v;
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Packed (or not) int32s of a repeated field.
fn ints(fs: &[(u64, u8, u64, &[u8])], num: u64) -> Vec<i64> {
    let mut out = Vec::new();
    for &(n, wt, v, p) in fs {
        if n != num {
            continue;
        }
        if wt == 0 {
            out.push(v as i64);
        } else {
            let mut p = p;
            while !p.is_empty() {
                out.push(take_varint(&mut p) as i64);
            }
        }
    }
    out
}

fn range_of(ints: &[i64]) -> Option<((i64, i64), (i64, i64))> {
    match *ints {
        [l, s, e] => Some(((l, s), (l, e))),
        [l, s, el, e] => Some(((l, s), (el, e))),
        _ => None,
    }
}

/// A SingleLineRange (fields line, start, end) or MultiLineRange message.
fn typed_range(p: &[u8], multi: bool) -> ((i64, i64), (i64, i64)) {
    let fs = fields(p);
    let get = |n: u64| fs.iter().find(|f| f.0 == n).map_or(0, |f| f.2 as i64);
    if multi {
        ((get(1), get(2)), (get(3), get(4)))
    } else {
        ((get(1), get(2)), (get(1), get(3)))
    }
}

fn occurrence(p: &[u8]) -> Occ {
    let fs = fields(p);
    let mut symbol = String::new();
    let mut roles = 0;
    let mut range = range_of(&ints(&fs, 1));
    let mut enclosing = range_of(&ints(&fs, 7));
    for &(n, _, v, p) in &fs {
        match n {
            2 => symbol = text(p),
            3 => roles = v,
            8 => range = Some(typed_range(p, false)),
            9 => range = Some(typed_range(p, true)),
            10 => enclosing = Some(typed_range(p, false)),
            11 => enclosing = Some(typed_range(p, true)),
            _ => {}
        }
    }
    Occ {
        symbol,
        roles,
        start: range.expect("an occurrence has a range").0,
        enclosing,
    }
}

/// Reads a whole index.
pub fn read(bytes: &[u8]) -> Reading {
    let mut reading = Reading {
        project_root: String::new(),
        docs: Vec::new(),
        external_implements: Vec::new(),
        external_infos: Vec::new(),
    };
    for (n, _, _, p) in fields(bytes) {
        match n {
            1 => {
                for (m, _, _, q) in fields(p) {
                    if m == 3 {
                        reading.project_root = text(q);
                    }
                }
            }
            2 => {
                let mut doc = Doc {
                    path: String::new(),
                    occs: Vec::new(),
                    implements: Vec::new(),
                    infos: Vec::new(),
                };
                for (m, _, _, q) in fields(p) {
                    match m {
                        1 => doc.path = text(q),
                        2 => doc.occs.push(occurrence(q)),
                        3 => {
                            implementations(q, &mut doc.implements);
                            doc.infos.push(info(q));
                        }
                        _ => {}
                    }
                }
                reading.docs.push(doc);
            }
            3 => {
                implementations(p, &mut reading.external_implements);
                reading.external_infos.push(info(p));
            }
            _ => {}
        }
    }
    reading
}

/// The (symbol, target) pairs of a SymbolInformation's relationships with is_implementation.
fn implementations(info: &[u8], out: &mut Vec<(String, String)>) {
    let info = fields(info);
    let sym = info
        .iter()
        .find(|f| f.0 == 1)
        .map(|f| text(f.3))
        .unwrap_or_default();
    for r in info.iter().filter(|f| f.0 == 4) {
        let rel = fields(r.3);
        let target = rel
            .iter()
            .find(|f| f.0 == 1)
            .map(|f| text(f.3))
            .unwrap_or_default();
        if rel.iter().any(|f| f.0 == 3 && f.2 == 1) {
            out.push((sym.clone(), target));
        }
    }
}

/// A SymbolInformation's symbol (field 1) and kind (field 5, 0 when left out).
fn info(info: &[u8]) -> (String, i32) {
    let fs = fields(info);
    let sym = fs
        .iter()
        .find(|f| f.0 == 1)
        .map(|f| text(f.3))
        .unwrap_or_default();
    let kind = fs.iter().find(|f| f.0 == 5).map_or(0, |f| f.2 as i32);
    (sym, kind)
}
