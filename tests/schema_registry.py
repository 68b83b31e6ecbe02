"""A small Confluent-compatible Schema Registry for the tests (tests/stream_avro.rs).

No real registry installs here (Confluent's and Apicurio's need Maven; Karapace is not on
PyPI), so this implements the REST subset the clients use, after Confluent's API reference:

- POST /subjects/{subject}/versions      register (the same schema text keeps its id; a
                                         schema the subject's latest cannot be read with is
                                         refused with 409, as under BACKWARD compatibility)
- POST /subjects/{subject}               look a schema up under a subject
- GET  /schemas/ids/{id}                 a schema by id (404, error_code 40403, if unknown)
- GET  /subjects, /subjects/{subject}/versions, /subjects/{subject}/versions/latest
- POST /compatibility/subjects/{subject}/versions/latest   {"is_compatible": bool}
- GET  /_test/hits                       how often each id was fetched (for the test)

Anything else is a 404, which the clients take as "not there" (confluent-kafka 2.16 first
asks GET /associations/... and falls back to the topic's subject).

Schemas are AVRO (the default) or PROTOBUF (`schemaType`), stored and returned as given
with their type: a .proto source, or the base64 FileDescriptorProto that confluent-kafka's
ProtobufSerializer registers (a real Confluent registry turns that into .proto text; the
daemon reads both). Schema references are stored but not resolved.

The compatibility rule is Avro's BACKWARD one for records, in its simplest form: every field
of the new schema without a default must be in the latest one, by name or by one of its
aliases. For PROTOBUF it is permissive (every schema is compatible): the tests register
evolved and incompatible Protobuf schemas on purpose, and it is the daemon's reading of
them, not this registry's, that is under test. Usage: python schema_registry.py PORT
"""

import json
import sys
import threading

from flask import Flask, jsonify, request

app = Flask(__name__)
lock = threading.Lock()
schemas = {}  # id -> (schema text, schema type)
ids_by_text = {}  # canonical text -> id
subjects = {}  # subject -> [id, ...] (versions in order)
hits = {}  # id -> GET /schemas/ids/{id} count

CT = "application/vnd.schemaregistry.v1+json"


def canonical(text, kind="AVRO"):
    """The key a schema is known by: Avro's parsed JSON, any other type's text and type."""
    if kind == "AVRO":
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return "{}:{}".format(kind, text.strip())


def error(status, code, message):
    resp = jsonify({"error_code": code, "message": message})
    resp.status_code = status
    return resp


def record_fields(text):
    s = json.loads(text)
    if isinstance(s, dict) and s.get("type") == "array":
        s = s["items"]
    if not isinstance(s, dict) or s.get("type") != "record":
        return None
    return s["fields"]


def backward_compatible(new_text, old_text, new_kind="AVRO", old_kind="AVRO"):
    """Whether data written with old_text reads with new_text (Avro record fields only;
    anything involving another type is compatible, see the module's doc)."""
    if new_kind != "AVRO" or old_kind != "AVRO":
        return True
    new, old = record_fields(new_text), record_fields(old_text)
    if new is None or old is None:
        return canonical(new_text) == canonical(old_text)
    old_names = {f["name"] for f in old}
    for f in new:
        names = {f["name"], *f.get("aliases", [])}
        if "default" not in f and not names & old_names:
            return False
    return True


def typed(body, kind):
    """An answer about a schema, with its schemaType unless AVRO (as the API leaves it out)."""
    if kind != "AVRO":
        body["schemaType"] = kind
    return body


def schema_body():
    body = request.get_json(force=True)
    return body["schema"], body.get("schemaType", "AVRO")


@app.post("/subjects/<path:subject>/versions")
def register(subject):
    text, kind = schema_body()
    with lock:
        versions = subjects.setdefault(subject, [])
        key = canonical(text, kind)
        known = ids_by_text.get(key)
        if known is not None and known in versions:
            return jsonify({"id": known})
        if versions and not backward_compatible(text, schemas[versions[-1]][0],
                                                kind, schemas[versions[-1]][1]):
            return error(409, 409, "Schema being registered is incompatible with an earlier schema")
        if known is None:
            known = len(schemas) + 1
            schemas[known] = (text, kind)
            ids_by_text[key] = known
        versions.append(known)
        return jsonify({"id": known})


@app.post("/subjects/<path:subject>")
def lookup(subject):
    text, kind = schema_body()
    with lock:
        sid = ids_by_text.get(canonical(text, kind))
        versions = subjects.get(subject, [])
        if sid is None or sid not in versions:
            return error(404, 40403, "Schema not found")
        return jsonify(typed({"subject": subject, "id": sid, "version": versions.index(sid) + 1,
                              "schema": schemas[sid][0]}, schemas[sid][1]))


@app.get("/schemas/ids/<int:sid>")
def by_id(sid):
    with lock:
        hits[sid] = hits.get(sid, 0) + 1
        if sid not in schemas:
            return error(404, 40403, "Schema {} not found".format(sid))
        text, kind = schemas[sid]
    return jsonify(typed({"schema": text}, kind))


@app.get("/subjects")
def list_subjects():
    with lock:
        return jsonify(sorted(subjects))


@app.get("/subjects/<path:subject>/versions")
def list_versions(subject):
    with lock:
        if subject not in subjects:
            return error(404, 40401, "Subject not found")
        return jsonify(list(range(1, len(subjects[subject]) + 1)))


@app.get("/subjects/<path:subject>/versions/latest")
def latest(subject):
    with lock:
        versions = subjects.get(subject)
        if not versions:
            return error(404, 40401, "Subject not found")
        sid = versions[-1]
        return jsonify(typed({"subject": subject, "id": sid, "version": len(versions),
                              "schema": schemas[sid][0]}, schemas[sid][1]))


@app.post("/compatibility/subjects/<path:subject>/versions/latest")
def compatibility(subject):
    text, kind = schema_body()
    with lock:
        versions = subjects.get(subject)
        if not versions:
            return error(404, 40401, "Subject not found")
        old_text, old_kind = schemas[versions[-1]]
        return jsonify({"is_compatible": backward_compatible(text, old_text, kind, old_kind)})


@app.get("/_test/hits")
def test_hits():
    with lock:
        return jsonify({str(k): v for k, v in hits.items()})


@app.after_request
def content_type(resp):
    if resp.mimetype == "application/json":
        resp.headers["Content-Type"] = CT
    return resp


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True)
