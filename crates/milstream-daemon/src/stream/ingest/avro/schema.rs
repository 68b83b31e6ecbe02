//! Avro schemas, as the registry sends a writer's and as `schemas/*.avsc` hold ours: parsed
//! into the shapes the datum decoder walks. Named types may be used again by name after
//! their definition; a schema that refers to itself (a recursive type) or to a type it does
//! not define (Confluent schema references) is refused, as is one nested deeper than
//! [`MAX_DEPTH`].

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// Deepest nesting of types accepted (schemas, and so records, of milstream are 3 deep).
pub const MAX_DEPTH: usize = 32;

/// One Avro type.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    Null,
    Boolean,
    Int,
    /// `long`; `micros`: with a `timestamp-micros` (or `local-timestamp-micros`) logical type.
    Long {
        micros: bool,
    },
    Float,
    Double,
    Bytes,
    String,
    Record(Arc<Record>),
    /// The symbols, decoded to their names.
    Enum(Arc<Vec<String>>),
    Array(Box<Schema>),
    Map(Box<Schema>),
    Union(Vec<Schema>),
    Fixed(usize),
}

/// A record type: its full name and fields in writing order.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub aliases: Vec<String>,
    pub schema: Schema,
    /// The field has a `default` (an optional field of a reader schema).
    pub has_default: bool,
}

impl Schema {
    /// How the type reads in a message: `long`, `array`, `record Point`, ...
    pub fn describe(&self) -> String {
        match self {
            Schema::Null => "null".into(),
            Schema::Boolean => "boolean".into(),
            Schema::Int => "int".into(),
            Schema::Long { micros: false } => "long".into(),
            Schema::Long { micros: true } => "long (timestamp-micros)".into(),
            Schema::Float => "float".into(),
            Schema::Double => "double".into(),
            Schema::Bytes => "bytes".into(),
            Schema::String => "string".into(),
            Schema::Record(r) => format!("record {}", r.name),
            Schema::Enum(_) => "enum".into(),
            Schema::Array(items) => format!("array of {}", items.describe()),
            Schema::Map(values) => format!("map of {}", values.describe()),
            Schema::Union(branches) => {
                let names: Vec<String> = branches.iter().map(Schema::describe).collect();
                format!("union [{}]", names.join(", "))
            }
            Schema::Fixed(n) => format!("fixed({n})"),
        }
    }
}

/// Parses a schema in Avro's JSON form.
pub fn parse(text: &str) -> Result<Schema, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    Parser::default().schema(&value, "", 0)
}

#[derive(Default)]
struct Parser {
    /// Named types defined so far, by full name.
    named: HashMap<String, Schema>,
}

/// `name` in `namespace`, unless it is already a full name.
fn full_name(name: &str, namespace: &str) -> String {
    if name.contains('.') || namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}.{name}")
    }
}

impl Parser {
    fn schema(&mut self, v: &Value, namespace: &str, depth: usize) -> Result<Schema, String> {
        if depth > MAX_DEPTH {
            return Err(format!("types nested deeper than {MAX_DEPTH}"));
        }
        match v {
            Value::String(name) => self.by_name(name, namespace),
            Value::Array(branches) => branches
                .iter()
                .map(|b| self.schema(b, namespace, depth + 1))
                .collect::<Result<_, _>>()
                .map(Schema::Union),
            Value::Object(map) => {
                let ty = map
                    .get("type")
                    .ok_or_else(|| "a type object without `type`".to_owned())?;
                let Value::String(ty) = ty else {
                    // {"type": {...}} or {"type": [...]}: the inner type.
                    return self.schema(ty, namespace, depth + 1);
                };
                self.complex(ty, map, namespace, depth)
            }
            other => Err(format!("not a type: {other}")),
        }
    }

    fn by_name(&self, name: &str, namespace: &str) -> Result<Schema, String> {
        Ok(match name {
            "null" => Schema::Null,
            "boolean" => Schema::Boolean,
            "int" => Schema::Int,
            "long" => Schema::Long { micros: false },
            "float" => Schema::Float,
            "double" => Schema::Double,
            "bytes" => Schema::Bytes,
            "string" => Schema::String,
            _ => self
                .named
                .get(&full_name(name, namespace))
                .or_else(|| self.named.get(name))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "unknown type `{name}` (recursive and referenced types are not supported)"
                    )
                })?,
        })
    }

    fn complex(
        &mut self,
        ty: &str,
        map: &serde_json::Map<String, Value>,
        namespace: &str,
        depth: usize,
    ) -> Result<Schema, String> {
        let str_of = |key: &str| map.get(key).and_then(Value::as_str);
        let child = |key: &str| {
            map.get(key)
                .ok_or_else(|| format!("`{ty}` without `{key}`"))
        };
        let named_full = || {
            let name = str_of("name").ok_or_else(|| format!("`{ty}` without a `name`"))?;
            let ns = str_of("namespace").unwrap_or(namespace);
            Ok::<_, String>((full_name(name, ns), ns.to_owned()))
        };
        let schema = match ty {
            "array" => Schema::Array(Box::new(self.schema(
                child("items")?,
                namespace,
                depth + 1,
            )?)),
            "map" => Schema::Map(Box::new(self.schema(
                child("values")?,
                namespace,
                depth + 1,
            )?)),
            "record" | "error" => {
                let (name, ns) = named_full()?;
                let fields = child("fields")?
                    .as_array()
                    .ok_or_else(|| format!("record {name}: `fields` is not an array"))?;
                let fields = fields
                    .iter()
                    .map(|f| self.field(f, &ns, depth + 1))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("record {name}: {e}"))?;
                let record = Schema::Record(Arc::new(Record {
                    name: name.clone(),
                    fields,
                }));
                self.named.insert(name, record.clone());
                record
            }
            "enum" => {
                let (name, _) = named_full()?;
                let symbols = child("symbols")?
                    .as_array()
                    .ok_or_else(|| format!("enum {name}: `symbols` is not an array"))?
                    .iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("enum {name}: a symbol is not a string"))?;
                let e = Schema::Enum(Arc::new(symbols));
                self.named.insert(name, e.clone());
                e
            }
            "fixed" => {
                let (name, _) = named_full()?;
                let size = child("size")?
                    .as_u64()
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| format!("fixed {name}: `size` is not a size"))?;
                self.named.insert(name, Schema::Fixed(size));
                Schema::Fixed(size)
            }
            "long" => Schema::Long {
                micros: matches!(
                    str_of("logicalType"),
                    Some("timestamp-micros" | "local-timestamp-micros")
                ),
            },
            // Any other logical type is read as its underlying type.
            primitive => self.by_name(primitive, namespace)?,
        };
        Ok(schema)
    }

    fn field(&mut self, f: &Value, namespace: &str, depth: usize) -> Result<Field, String> {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| "a field without a `name`".to_owned())?;
        let ty = f
            .get("type")
            .ok_or_else(|| format!("field `{name}` without a `type`"))?;
        let aliases = f
            .get("aliases")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Field {
            name: name.to_owned(),
            aliases,
            schema: self
                .schema(ty, namespace, depth)
                .map_err(|e| format!("field `{name}`: {e}"))?,
            has_default: f.get("default").is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_types_are_used_again_and_unknown_ones_refused() {
        let s = parse(
            r#"{"type":"array","items":{"type":"record","name":"P","namespace":"m","fields":[
                {"name":"a","type":["null","string"],"default":null},
                {"name":"b","type":{"type":"long","logicalType":"timestamp-micros"},"aliases":["c"]},
                {"name":"d","type":"m.P2","default":1}]}}"#,
        );
        assert!(s.unwrap_err().contains("unknown type `m.P2`"));
        let s = parse(
            r#"{"type":"record","name":"Q","fields":[
                {"name":"e","type":{"type":"enum","name":"E","symbols":["x","y"]}},
                {"name":"f","type":"E"}]}"#,
        )
        .unwrap();
        let Schema::Record(r) = s else { panic!() };
        assert_eq!(r.fields[0].schema, r.fields[1].schema);
        let recursive =
            r#"{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"]}]}"#;
        assert!(parse(recursive).is_err());
        let deep = "[".repeat(40) + "\"int\"" + &"]".repeat(40);
        assert!(parse(&deep).unwrap_err().contains("deeper"));
    }
}
