"""Part of scripts/fuzz.sh (loaded through SCHEMATHESIS_HOOKS): schemathesis's
positive_data_acceptance check ("a request the schema allows is accepted"), less the
refusals a schema cannot express. Each exclusion is named by the operation and the error
code the service answers, and says why; anything else the check finds still fails the run.
"""

import json
import re

import schemathesis
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import ensure_resource_availability, positive_data_acceptance


def _code(response):
    try:
        return json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        return None


def _pattern(case, header):
    """The documented pattern of the operation's header `header`, or None."""
    for parameter in case.operation.headers:
        if parameter.name.lower() == header.lower():
            return (parameter.definition.get("schema") or {}).get("pattern")
    return None


def _unexpressible(case, response):
    """Why a refusal of this schema-valid request is not a disagreement with the schema, or None."""
    operation = f"{case.method.upper()} {case.path}"
    code = _code(response)
    if response.status_code == 422 and code == "IDEMPOTENCY_KEY_REUSED":
        # The fuzzer sends keys it generated, and sends one key again with another request;
        # which keys a caller has used is state, not something a schema can say.
        return "a reused Idempotency-Key"
    if (
        operation == "GET /api/v1/reviews"
        and response.status_code == 422
        and code == "VALIDATION_FAILED"
        and (case.query or {}).get("cursor") is not None
    ):
        # A cursor of the right form that names no review (the next page starts after the
        # review it names): which reviews exist is not the schema's to say. Every other
        # parameter of a positive case is in its range, so the cursor is the refusal.
        return "a cursor naming no review"
    if response.status_code == 412 and code == "VERSION_MISMATCH":
        # An If-Match of the right form naming a version the document is not at: which
        # version a document is at is state.
        return "an If-Match naming another version"
    if operation == "POST /api/v1/admin/spaces" and response.status_code == 409 and code == "ALREADY_EXISTS":
        # A space key of the right form that is taken (`default` always is): which spaces
        # exist is state.
        return "a space key that is taken"
    if (
        operation == "GET /api/v1/spaces/{key}/members"
        and response.status_code == 422
        and code == "VALIDATION_FAILED"
        and (case.query or {}).get("cursor") is not None
    ):
        # A cursor of the right form (hexadecimal) that names no subject: what the service
        # issued is not the schema's to say.
        return "a cursor naming no member"
    message = ""
    try:
        message = json.loads(response.content).get("message") or ""
    except (ValueError, AttributeError):
        pass
    if response.status_code == 422 and code == "VALIDATION_FAILED" and "no review policy is named" in message:
        # A policy name of the right form that no admin wrote: which policies exist is state.
        return "a policy that does not exist"
    if (
        operation == "GET /api/v1/reviews"
        and response.status_code == 422
        and "overdue=true lists pending reviews only" in message
    ):
        # overdue=true with another status: a dependency between two parameters, which
        # OpenAPI 3.0 cannot state.
        return "overdue=true with a status other than PENDING"
    if operation == "GET /api/v1/documents" and response.status_code == 422 and "give space too" in message:
        # q without space (a search is of one space): a dependency between two parameters,
        # which OpenAPI 3.0 cannot state.
        return "q without space"
    if operation == "PUT /api/v1/admin/policies/{name}" and response.status_code == 422 and (
        "names two stages" in message or "built-in policy" in message
    ):
        # Stage names unique within the array of objects, and the one name that cannot be
        # written: neither has a JSON Schema form the generators honour.
        return "two stages of one name, or the built-in policy"
    if (
        operation == "PUT /api/v1/admin/policies/{name}"
        and response.status_code == 422
        and "needs reverify_after_secs" in message
    ):
        # A grace for re-verifications with no re-verification (reverify_grace_secs without
        # reverify_after_secs): a dependency between two fields, which the generators do not
        # honour.
        return "reverify_grace_secs without reverify_after_secs"
    if (
        operation == "POST /api/v1/documents/{id}/comments"
        and response.status_code == 422
        and "is not a review of this document" in message
    ):
        # A review_id of the right form that names no review of this document: which
        # reviews a document has is state.
        return "a review_id of no review of this document"
    if operation == "POST /api/v1/admin/replays" and response.status_code == 422 and (
        "does not exist on the broker" in message
        or "must be later than from" in message
        or "are for history replays" in message
    ):
        # A target queue of the right form that nobody declared (which queues the broker
        # has is state), and two dependencies between fields that OpenAPI 3.0 cannot
        # state: `to` after `from`, and no time range or types for a snapshot.
        return "a replay to a queue that does not exist, or a range of one field on another"
    if (
        operation == "POST /api/v1/admin/replays"
        and response.status_code == 422
        and code == "REPLAY_TARGET_NOT_ALLOWED"
    ):
        # Which queues a replay may target is configuration (replay.allowed_target_queues),
        # not part of the schema.
        return "a replay to a queue the configuration does not allow"
    if operation == "POST /api/v1/admin/replays" and response.status_code == 409 and code == "REPLAY_RUNNING":
        # One running replay per queue: whether one runs is state.
        return "a replay to a queue that has one running"
    if response.status_code == 400 and code == "VALIDATION_FAILED" and message.startswith("If-Match:"):
        # schemathesis's coverage phase sends `If-Match: 0` as valid, though the header's
        # documented pattern (entity tags, or *) refuses it: refused only if it matches.
        value = (case.headers or {}).get("If-Match")
        pattern = _pattern(case, "If-Match")
        if value is not None and pattern is not None and re.search(pattern, value) is None:
            return "an If-Match off its documented pattern, labelled valid by the coverage phase"
    if operation == "POST /api/v1/spaces/{key}/webhooks" and (
        (response.status_code == 422 and message.startswith("url:"))
        or (response.status_code == 409 and code == "INVALID_STATE")
    ):
        # A URL of the right length that is not one the service may send to (its scheme,
        # its host, an address inside the service's network: rules a pattern cannot hold
        # whole), and a space that has its 20 endpoints already (state).
        return "a URL the service may not send to, or a space with its 20 endpoints"
    body = case.body
    if response.status_code == 422 and isinstance(body, (bool, int, float, str, list)):
        # schemathesis's coverage phase pairs a valid header with an invalid body (`0`) and
        # calls the whole request valid; every request body of this API is a JSON object.
        return "a body that is not an object, labelled valid by the coverage phase"
    return None


@schemathesis.check
def positive_data_acceptance_but_state(ctx, response, case):
    """positive_data_acceptance, less the refusals named in _unexpressible."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if _unexpressible(case, response):
            return None
        raise


@schemathesis.check
def ensure_resource_availability_but_unpublished(ctx, response, case):
    """ensure_resource_availability, less what a document just created does not have yet, by
    contract: its published revision (`GET /documents/{id}/published` is 404 until a first
    approval publishes one) and an edit lease (`GET /documents/{id}/lease` is 404 until
    someone takes one).
    """
    if (
        case.method.upper() == "GET"
        and case.path in ("/api/v1/documents/{id}/published", "/api/v1/documents/{id}/lease")
        and response.status_code == 404
        and _code(response) == "NOT_FOUND"
    ):
        return None
    return ensure_resource_availability(ctx, response, case)
