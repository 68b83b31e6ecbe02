"""Produces a test's messages (tests/stream_avro.rs) as Protobuf with confluent-kafka's
ProtobufSerializer and SchemaRegistryClient (the real, independent client), the Protobuf
counterpart of avro_produce.py: the same MESSAGES.json, the same kinds.

Usage: python protobuf_produce.py BOOTSTRAP REGISTRY_URL MESSAGES.json SCHEMAS_DIR

The message classes are generated at run time from schemas/*.proto with grpcio-tools'
protoc (into a temporary folder), beside two of the test's own:
- "points_v2": an evolved Point, series_id renamed to device (same number) and a new
  optional field site, registered under the same subject;
- "incompatible": a BadPoint whose ts is a string.
Broken messages ("bad"): "unknown_id", "truncated" and "incompatible", as in avro_produce.py.
"""

import importlib
import json
import os
import sys
import tempfile

from grpc_tools import protoc

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient, record_subject_name_strategy
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

bootstrap, registry_url, messages_path, schemas_dir = sys.argv[1:5]
messages = json.load(open(messages_path))
producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

# Another package than io.milstream: the classes share one descriptor pool.
POINT_V2 = """syntax = "proto3";
package io.milstream.test.v2;
message Point {
  string device = 1;
  int64 ts = 2;
  optional double value = 3;
  repeated double values = 4;
  optional string model = 5;
  optional string site = 6;
}
message Points { repeated Point points = 1; }
"""

BAD_POINT = """syntax = "proto3";
package io.milstream.test;
message BadPoint {
  string series_id = 1;
  string ts = 2;
  double value = 3;
}
"""


def generate():
    """The _pb2 modules of our schemas and the test's, importable."""
    out = tempfile.mkdtemp(prefix="milstream-pb2-")
    for name, text in [("point_v2.proto", POINT_V2), ("bad_point.proto", BAD_POINT)]:
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    for include, files in [(schemas_dir, ["point.proto", "bag.proto", "label.proto"]),
                           (out, ["point_v2.proto", "bad_point.proto"])]:
        args = ["protoc", "-I" + include, "--python_out=" + out] + files
        assert protoc.main(args) == 0, "protoc failed on {}".format(files)
    sys.path.insert(0, out)
    return {n: importlib.import_module(n + "_pb2")
            for n in ["point", "bag", "label", "point_v2", "bad_point"]}


def serializers(pb):
    client = SchemaRegistryClient({"url": registry_url})
    ser = lambda cls, **conf: ProtobufSerializer(cls, client, conf)
    return {
        "points": ser(pb["point"].Points),
        "points_v2": ser(pb["point_v2"].Points),
        "bag": ser(pb["bag"].Bag),
        "label": ser(pb["label"].Label),
        # Another subject (the record's name), as a producer of another schema would.
        "incompatible": ser(pb["bad_point"].BadPoint,
                            **{"subject.name.strategy": record_subject_name_strategy}),
    }


def point(cls, p, v2=False):
    m = cls(ts=p["ts"])
    if v2:
        m.device = p["series_id"]
        m.site = "plant-1"
    else:
        m.series_id = p["series_id"]
    if "value" in p:
        m.value = p["value"]
    m.values.extend(p.get("values", []))
    return m


def message(pb, kind, value):
    if kind in ("points", "points_v2"):
        mod = pb["point"] if kind == "points" else pb["point_v2"]
        return mod.Points(points=[point(mod.Point, p, kind == "points_v2") for p in value])
    if kind == "bag":
        bag = pb["bag"].Bag(bag_id=value["bag_id"])
        for inst in value["instances"]:
            bag.instances.add().values.extend(inst)
        if "label" in value:
            bag.label = value["label"]
        return bag
    if kind == "label":
        return pb["label"].Label(**value)
    raise ValueError(kind)


def bad(ser, pb, topic, what):
    ctx = SerializationContext(topic, MessageField.VALUE)
    if what == "unknown_id":
        return bytes([0]) + (999999).to_bytes(4, "big") + b"\x00\x0a\x06sensor"
    if what == "truncated":
        one = message(pb, "points", [{"series_id": "sensor-0", "ts": 1, "value": 0.5}])
        return ser["points"](one, ctx)[:-5]
    if what == "incompatible":
        m = pb["bad_point"].BadPoint(series_id="sensor-0", ts="yesterday", value=1.0)
        return ser["incompatible"](m, ctx)
    raise ValueError(what)


pb = generate()
ser = serializers(pb)
for m in messages:
    topic, kind, value = m["topic"], m["kind"], m["value"]
    ctx = SerializationContext(topic, MessageField.VALUE)
    if kind == "bad":
        payload = bad(ser, pb, topic, value)
    else:
        payload = ser[kind](message(pb, kind, value), ctx)
    producer.produce(topic, key=m["key"].encode(), value=payload)
    producer.poll(0)
left = producer.flush(60)
assert left == 0, "{} messages not delivered".format(left)
print(len(messages))
