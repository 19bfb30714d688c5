//! Reading a JSON-lines dump's objects: keys checked as they are read, numbers kept exact.

use std::borrow::Cow;

use super::Field;

/// A JSON object read with its keys checked: a key given twice is an error (serde_json's
/// own map keeps the last value silently).
pub(super) struct JsonObject(pub(super) serde_json::Map<String, serde_json::Value>);

impl<'de> serde::Deserialize<'de> for JsonObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = JsonObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<JsonObject, A::Error> {
                let mut out = serde_json::Map::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v: serde_json::Value = map.next_value()?;
                    if out.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!(
                            "key \"{k}\" is given twice"
                        )));
                    }
                    out.insert(k, v);
                }
                Ok(JsonObject(out))
            }
        }
        d.deserialize_map(Visitor)
    }
}

/// A JSON number as a field: a number when a double holds it exactly, else (an integer past
/// 2^53 a double would round) the text of its digits, as the tab-separated formats keep a
/// field that is not the shortest printing of a double. `None` when it is not finite.
pub(super) fn json_number(n: &serde_json::Number) -> Option<Field<'static>> {
    let exact = |x: f64| Field::Number(if x == 0.0 { 0.0 } else { x });
    if let Some(i) = n.as_u64() {
        let x = i as f64;
        return Some(if x as u64 == i && x < u64::MAX as f64 {
            exact(x)
        } else {
            Field::Text(Cow::Owned(i.to_string()))
        });
    }
    if let Some(i) = n.as_i64() {
        let x = i as f64;
        return Some(if x as i64 == i {
            exact(x)
        } else {
            Field::Text(Cow::Owned(i.to_string()))
        });
    }
    n.as_f64().filter(|x| x.is_finite()).map(exact)
}
