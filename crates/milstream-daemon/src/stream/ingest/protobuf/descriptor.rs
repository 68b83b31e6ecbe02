//! A registry's Protobuf schema compiled into descriptors, at run time and without protoc:
//! the `.proto` source (what Confluent's registry and its kin return for
//! `GET /schemas/ids/{id}`), or a base64 `FileDescriptorProto` (what confluent-kafka's
//! clients register, and a registry that stores schemas as given returns). Google's
//! well-known types may be imported; any other import (a schema reference) is refused.
//! Then every message of the file with the indexes that name it (see `indexes.rs`).

use base64::Engine as _;
use prost_reflect::{FileDescriptor, MessageDescriptor};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

/// The name the schema's own file is compiled under when it has none.
const FILE_NAME: &str = "schema.proto";

/// Serves the schema's one file to the compiler.
struct OneFile(File);

impl FileResolver for OneFile {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == self.0.name() {
            Ok(self.0.clone())
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

/// Compiles the schema text into the descriptor of its file.
pub fn compile(text: &str) -> Result<FileDescriptor, String> {
    let file = match descriptor_bytes(text) {
        Some(bytes) => {
            let mut proto: prost_types::FileDescriptorProto =
                prost::Message::decode(bytes.as_slice()).map_err(|e| {
                    format!("a base64 schema that is not a FileDescriptorProto: {e}")
                })?;
            if proto.name().is_empty() {
                proto.name = Some(FILE_NAME.into());
            }
            File::from_file_descriptor_proto(proto)
        }
        None => File::from_source(FILE_NAME, text).map_err(|e| e.to_string())?,
    };
    let name = file.name().to_owned();
    let mut resolver = ChainFileResolver::new();
    resolver.add(OneFile(file));
    resolver.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    compiler.open_file(&name).map_err(|e| {
        if e.is_file_not_found() {
            format!("{e} (schema references are not read: only Google's well-known types may be imported)")
        } else {
            e.to_string()
        }
    })?;
    compiler
        .descriptor_pool()
        .get_file_by_name(&name)
        .ok_or_else(|| format!("the compiled schema has no file {name}"))
}

/// The bytes of a base64 schema: text without spaces that decodes. `.proto` source always
/// has spaces or braces, which base64 lacks.
fn descriptor_bytes(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if text.is_empty() || text.contains(|c: char| c.is_whitespace() || c == '{') {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Every message of `file` with its indexes (the first into the file's messages, each next
/// into the nested messages of the one before), nested ones after their parent.
pub fn all_messages(file: &FileDescriptor) -> Vec<(Vec<i32>, MessageDescriptor)> {
    let mut out: Vec<(Vec<i32>, MessageDescriptor)> = Vec::new();
    let mut todo: Vec<(Vec<i32>, MessageDescriptor)> = file
        .messages()
        .enumerate()
        .map(|(i, m)| (vec![i as i32], m))
        .collect();
    todo.reverse();
    while let Some((path, m)) = todo.pop() {
        let children: Vec<MessageDescriptor> = m.child_messages().collect();
        for (j, child) in children.into_iter().enumerate().rev() {
            let mut p = path.clone();
            p.push(j as i32);
            todo.push((p, child));
        }
        out.push((path, m));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::ingest::protobuf::reader::POINT_PROTO;

    const NESTED: &str = r#"syntax = "proto3";
        message A { message B { message C { int64 x = 1; } } string a = 1; }
        message D { int32 d = 1; }"#;

    #[test]
    fn indexes_name_messages_and_nested_ones() {
        let file = compile(NESTED).unwrap();
        let all: Vec<(Vec<i32>, String)> = all_messages(&file)
            .into_iter()
            .map(|(p, m)| (p, m.full_name().to_owned()))
            .collect();
        let want = [
            (vec![0], "A"),
            (vec![0, 0], "A.B"),
            (vec![0, 0, 0], "A.B.C"),
            (vec![1], "D"),
        ];
        let want: Vec<(Vec<i32>, String)> =
            want.into_iter().map(|(p, n)| (p, n.to_owned())).collect();
        assert_eq!(all, want);
    }

    /// The source and the base64 descriptor of the same file compile to the same messages.
    #[test]
    fn source_and_base64_descriptors_compile_alike() {
        let file = compile(POINT_PROTO).unwrap();
        let bytes = prost::Message::encode_to_vec(file.file_descriptor_proto());
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        let again = compile(&b64).unwrap();
        assert_eq!(
            again.file_descriptor_proto().message_type,
            file.file_descriptor_proto().message_type
        );
    }

    #[test]
    fn broken_schemas_say_why() {
        let e = compile("message {").unwrap_err();
        assert!(!e.is_empty());
        let e =
            compile("syntax = \"proto3\"; import \"other.proto\"; message A { other.B b = 1; }")
                .unwrap_err();
        assert!(e.contains("schema references"), "{e}");
        let e = compile("AAAA////").unwrap_err();
        assert!(e.contains("FileDescriptorProto"), "{e}");
        // Well-known types import.
        compile("syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; message A { google.protobuf.Timestamp t = 1; }")
            .unwrap();
    }
}
