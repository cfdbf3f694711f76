"""The event matching of flow.py: python3 -m unittest scripts/image/test_flow.py"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow import missing_events  # noqa: E402


def body(event_type, document_id):
    return json.dumps({"event_type": event_type, "document_id": document_id}).encode()


class MissingEvents(unittest.TestCase):
    def test_both_present(self):
        bodies = [body("document.submitted", "d1"), body("document.approved", "d1")]
        self.assertEqual(missing_events(bodies, "d1"), [])

    def test_other_documents_do_not_count(self):
        bodies = [body("document.submitted", "d1"), body("document.approved", "d2")]
        self.assertEqual(missing_events(bodies, "d1"), ["document.approved"])

    def test_other_types_and_garbage_ignored(self):
        bodies = [b"not json", b"[1]", body("review.approval_recorded", "d1")]
        self.assertEqual(missing_events(bodies, "d1"), ["document.submitted", "document.approved"])


if __name__ == "__main__":
    unittest.main()
