"""Produces a test's messages (tests/stream_avro.rs) with confluent-kafka, as JSON or as Avro
through confluent-kafka's AvroSerializer and SchemaRegistryClient (the real, independent
client), so the daemon's two input paths can be compared on the same data.

Usage: python avro_produce.py BOOTSTRAP REGISTRY_URL json|avro MESSAGES.json SCHEMAS_DIR

MESSAGES.json is a list of {"topic", "key", "kind", "value"}; kind is
- "points": value is a list of points, one message (a JSON array, or an Avro array of Point);
- "points_v2": the same, written with an evolved schema (series_id renamed to device with
  the alias series_id, a new optional field site), registered under the same subject;
- "bag" / "label": value is one record;
- "bad": value names a broken message: "unknown_id", "truncated" or "incompatible" (JSON
  mode writes a broken JSON message in its place, so offsets line up across the two runs).
"""

import json
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from confluent_kafka.schema_registry import record_subject_name_strategy

bootstrap, registry_url, mode, messages_path, schemas_dir = sys.argv[1:6]
messages = json.load(open(messages_path))
producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})


def avsc(name):
    return json.load(open("{}/{}.avsc".format(schemas_dir, name)))


def serializers():
    client = SchemaRegistryClient({"url": registry_url})
    point = avsc("point")
    v2 = json.loads(json.dumps(point))
    v2["fields"][0] = {"name": "device", "type": "string", "aliases": ["series_id"]}
    v2["fields"].append({"name": "site", "type": ["null", "string"], "default": None})
    bad = {"type": "record", "name": "BadPoint", "namespace": "io.milstream.test",
           "fields": [{"name": "series_id", "type": "string"},
                      {"name": "ts", "type": "string"},
                      {"name": "value", "type": "double"}]}
    array = lambda items: json.dumps({"type": "array", "items": items})
    return {
        "points": AvroSerializer(client, array(point)),
        "points_v2": AvroSerializer(client, array(v2), to_dict=lambda ps, ctx: [
            {"device": p["series_id"], "ts": p["ts"], "value": p["value"], "site": "plant-1"}
            for p in ps]),
        "bag": AvroSerializer(client, json.dumps(avsc("bag"))),
        "label": AvroSerializer(client, json.dumps(avsc("label"))),
        # Another subject (the record's name), as a producer of another schema would.
        "incompatible": AvroSerializer(client, json.dumps(bad), conf={
            "subject.name.strategy": record_subject_name_strategy}),
    }


def bad_avro(ser, topic, what):
    ctx = SerializationContext(topic, MessageField.VALUE)
    if what == "unknown_id":
        return bytes([0]) + (999999).to_bytes(4, "big") + b"\x02\x0asensor"
    if what == "truncated":
        good = ser["points"]([{"series_id": "sensor-0", "ts": 1, "value": 0.5}], ctx)
        return good[:-5]
    if what == "incompatible":
        return ser["incompatible"]({"series_id": "sensor-0", "ts": "yesterday", "value": 1.0}, ctx)
    raise ValueError(what)


def bad_json(what):
    return {
        "unknown_id": b"not json",
        "truncated": b'[{"series_id":"sensor-0","ts":1,"val',
        "incompatible": b'{"series_id":"sensor-0","ts":"yesterday","value":1.0}',
    }[what]


ser = serializers() if mode == "avro" else None
for m in messages:
    topic, kind, value = m["topic"], m["kind"], m["value"]
    if kind == "bad":
        payload = bad_avro(ser, topic, value) if ser else bad_json(value)
    elif ser:
        payload = ser[kind](value, SerializationContext(topic, MessageField.VALUE))
    else:
        payload = json.dumps(value).encode()
    producer.produce(topic, key=m["key"].encode(), value=payload)
    producer.poll(0)
left = producer.flush(60)
assert left == 0, "{} messages not delivered".format(left)
print(len(messages))
