"""A consumer that reads one kh-review event as a CloudEvent, with the Python CloudEvents
SDK's RabbitMQ binding (binary content mode: the ce- headers are the attributes, the
content_type property is datacontenttype, the body is the data), and checks every
attribute against what it was told to expect.

    python cloudevents_consumer.py AMQP_URL QUEUE EXPECTED_JSON

EXPECTED_JSON holds the attributes (id, source, type, subject, time, dataschema,
datacontenttype, specversion, and the extension attribute khspace: the document's space)
and the data. Prints the event's attributes and data as one
JSON line; exits 1, naming each attribute that differs, when one does. Run by
tests/api/meta/cloudevents.rs in the virtualenv of scripts/events_venv.sh.
"""

import json
import sys
from datetime import datetime

import pika
from cloudevents.core.bindings import rabbitmq


def read_one(url: str, queue: str) -> rabbitmq.RabbitMQMessage:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = connection.channel()
        method, properties, body = channel.basic_get(queue=queue, auto_ack=True)
        if method is None:
            sys.exit(f"no message on {queue}")
        headers = {k: v.decode() if isinstance(v, bytes) else v
                   for k, v in (properties.headers or {}).items()}
        return rabbitmq.RabbitMQMessage(
            headers=headers, content_type=properties.content_type, body=body)
    finally:
        connection.close()


def main() -> None:
    url, queue, expected = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    event = rabbitmq.from_binary_event(read_one(url, queue))
    got = {k: (v.isoformat() if isinstance(v, datetime) else v)
           for k, v in event.get_attributes().items()}
    print(json.dumps({"attributes": got, "data": event.get_data()}))
    wrong = []
    for name, want in expected["attributes"].items():
        have = event.get_attributes().get(name)
        if name == "time":
            ok = isinstance(have, datetime) and have == datetime.fromisoformat(
                want.replace("Z", "+00:00"))
        else:
            ok = have == want
        if not ok:
            wrong.append(f"{name}: got {have!r}, want {want!r}")
    if event.get_data() != expected["data"]:
        wrong.append(f"data: got {event.get_data()!r}, want {expected['data']!r}")
    if wrong:
        sys.exit("CloudEvent attributes differ:\n" + "\n".join(wrong))


if __name__ == "__main__":
    main()
