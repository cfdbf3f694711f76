"""The benchmark peer: kh-review's seed design of the approve path, in plain Python.

`make bench-peer` drives the same `wrk` load of approvals (benches/peer/approve.lua) against
kh-review and against this app, on the same stores (PostgreSQL, Redis, MongoDB, RabbitMQ),
so the figures say what kh-review's extra guarantees cost next to a good Python build of the
design it started from. It runs under uvicorn (uvloop, httptools), with pools made once per
worker: asyncpg, redis.asyncio, pymongo's AsyncMongoClient and one robust aio-pika connection
whose channel has publisher confirms on.

`POST /api/v1/reviews/{id}/approve`: JWT (HS256) -> Redis lock on the review (skipped, with a
warning, while Redis is unreachable) -> one PostgreSQL transaction locking the review and
its document -> MongoDB projection (never overwriting a newer version) -> a confirmed,
mandatory publish of `document.approved`.

Left out, compared with kh-review: no transactional outbox (the event is published after the
commit, so a crash in between loses it, and a failed publish leaves the approval committed
and answers 500), no audit trail, no Idempotency-Key, no fencing token on the lock (a lock
that expires mid-request is not noticed), no review stages, groups, claims or votes, no
policies, spaces or revisions, no tracing or metrics.

Environment: PEER_PG_URL, PEER_REDIS_URL, PEER_MONGO_URL, PEER_MONGO_DB, PEER_AMQP_URL,
PEER_EXCHANGE (a durable topic exchange, declared at startup), PEER_JWT_SECRET;
PEER_PG_POOL (asyncpg connections per worker, default 10).
"""

import json
import logging
import os
import uuid
from contextlib import asynccontextmanager
from datetime import datetime, timezone

import aio_pika
import asyncpg
import jwt
import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pymongo import AsyncMongoClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger("uvicorn.error")

LOCK_TTL_MS = 30_000
# Delete the lock only while it still holds our token (another request may own it by now).
RELEASE_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)
PUBLISH_TIMEOUT_S = 5
# A nack, a returned message (PublishError), no confirm in time, a closed channel or a lost
# connection.
PUBLISH_FAILED = (
    aio_pika.exceptions.AMQPError, aio_pika.exceptions.ChannelInvalidStateError,
    ConnectionError, TimeoutError,
)


class Problem(Exception):
    """An error answer: its HTTP status and a JSON body `{"code": ...}`."""

    def __init__(self, status: int, code: str):
        super().__init__(code)
        self.status, self.code = status, code


@asynccontextmanager
async def lifespan(app: FastAPI):
    env = os.environ
    st = app.state
    st.jwt_secret = env["PEER_JWT_SECRET"]
    pool_size = int(env.get("PEER_PG_POOL", "10"))
    st.pg = await asyncpg.create_pool(env["PEER_PG_URL"], min_size=pool_size, max_size=pool_size)
    st.redis = aioredis.Redis(
        # Blocking: past 64 requests at once a request waits for a connection (up to 2 s)
        # instead of failing over to "Redis unreachable".
        connection_pool=aioredis.BlockingConnectionPool.from_url(
            env["PEER_REDIS_URL"], max_connections=64, timeout=2,
            socket_connect_timeout=1, socket_timeout=2,
        )
    )
    st.release = st.redis.register_script(RELEASE_LUA)
    st.mongo = AsyncMongoClient(env["PEER_MONGO_URL"])
    st.projection = st.mongo[env["PEER_MONGO_DB"]]["documents"]
    st.amqp = await aio_pika.connect_robust(env["PEER_AMQP_URL"])
    channel = await st.amqp.channel(publisher_confirms=True, on_return_raises=True)
    st.exchange = await channel.declare_exchange(
        env["PEER_EXCHANGE"], aio_pika.ExchangeType.TOPIC, durable=True
    )
    try:
        yield
    finally:
        await st.amqp.close()
        await st.mongo.close()
        await st.redis.aclose(close_connection_pool=True)
        await st.pg.close()


app = FastAPI(title="kh-review benchmark peer", lifespan=lifespan, docs_url=None, redoc_url=None)


@app.exception_handler(Problem)
async def problem_response(_request: Request, exc: Problem) -> JSONResponse:
    return JSONResponse({"code": exc.code}, status_code=exc.status)


@app.get("/health")
async def health() -> JSONResponse:
    return JSONResponse({"status": "ok"})


def caller(request: Request) -> str:
    """The caller's `sub`, once its bearer token is valid and it holds reviewer or admin."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Problem(401, "UNAUTHENTICATED")
    try:
        claims = jwt.decode(
            token, request.app.state.jwt_secret, algorithms=["HS256"],
            options={"require": ["sub", "exp"]},
        )
    except jwt.PyJWTError:
        raise Problem(401, "UNAUTHENTICATED") from None
    roles, sub = claims.get("roles", []), claims["sub"]
    if not isinstance(sub, str) or not isinstance(roles, list):
        raise Problem(401, "UNAUTHENTICATED")
    if "reviewer" not in roles and "admin" not in roles:
        raise Problem(403, "FORBIDDEN")
    return sub


async def comment_of(request: Request) -> str | None:
    """The optional `comment` of the body: nothing, `{}`, `null` or `{"comment": "..."}`."""
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:
        raise Problem(400, "VALIDATION_FAILED") from None
    if body is None:
        return None
    if not isinstance(body, dict):
        raise Problem(400, "VALIDATION_FAILED")
    comment = body.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise Problem(400, "VALIDATION_FAILED")
    return comment


async def approve_rows(pg: asyncpg.Pool, review_id: uuid.UUID, sub: str, comment):
    """The transaction: both rows locked, checked and updated; returns the document's row."""
    async with pg.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL lock_timeout = '2s'")
        try:
            review = await conn.fetchrow(
                "SELECT document_id, status FROM reviews WHERE id = $1 FOR UPDATE", review_id
            )
            if review is None:
                raise Problem(404, "NOT_FOUND")
            doc = await conn.fetchrow(
                "SELECT author_id, status FROM documents WHERE id = $1 FOR UPDATE",
                review["document_id"],
            )
        except asyncpg.LockNotAvailableError:
            raise Problem(409, "LOCK_NOT_ACQUIRED") from None
        if doc is None:
            raise Problem(404, "NOT_FOUND")
        if review["status"] != "PENDING" or doc["status"] != "PENDING_REVIEW":
            raise Problem(409, "INVALID_STATE")
        if doc["author_id"] == sub:
            raise Problem(403, "SELF_REVIEW_FORBIDDEN")
        await conn.execute(
            "UPDATE reviews SET status = 'APPROVED', decided_by = $2, decided_at = now(),"
            " comment = $3 WHERE id = $1",
            review_id, sub, comment,
        )
        return await conn.fetchrow(
            "UPDATE documents SET status = 'APPROVED', version = version + 1, updated_at = now()"
            " WHERE id = $1 RETURNING id, title, version, updated_at",
            review["document_id"],
        )


@app.post("/api/v1/reviews/{review_id}/approve")
async def approve(review_id: str, request: Request) -> JSONResponse:
    st = request.app.state
    sub = caller(request)
    try:
        rid = uuid.UUID(review_id)
    except ValueError:
        raise Problem(404, "NOT_FOUND") from None
    comment = await comment_of(request)

    key, token, locked = f"lock:doc:review:{{{rid}}}", uuid.uuid4().hex, False
    try:
        locked = bool(await st.redis.set(key, token, nx=True, px=LOCK_TTL_MS))
        if not locked:
            raise Problem(409, "LOCK_NOT_ACQUIRED")
    except REDIS_DOWN as e:
        log.warning("redis unreachable (%s); approving %s under the row lock alone", e, rid)
    try:
        doc = await approve_rows(st.pg, rid, sub, comment)
        doc_id, version = str(doc["id"]), doc["version"]
        await st.projection.update_one(
            {"_id": doc_id, "version": {"$lt": version}},
            {"$set": {"status": "APPROVED", "version": version, "title": doc["title"],
                      "updated_at": doc["updated_at"]}},
        )
        event = {
            "event_id": str(uuid.uuid4()), "type": "document.approved",
            "document_id": doc_id, "review_id": str(rid), "version": version,
            "approved_by": sub, "occurred_at": datetime.now(timezone.utc).isoformat(),
        }
        message = aio_pika.Message(
            json.dumps(event).encode(), content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT, message_id=event["event_id"],
        )
        try:
            # Awaits the broker's confirm; a returned (unroutable) message raises.
            await st.exchange.publish(
                message, routing_key="document.approved", mandatory=True, timeout=PUBLISH_TIMEOUT_S
            )
        except PUBLISH_FAILED as e:
            log.error("document.approved for %s not published: %r", doc_id, e)
            raise Problem(500, "PUBLISH_FAILED") from None
    finally:
        if locked:
            try:
                await st.release(keys=[key], args=[token])
            except REDIS_DOWN as e:
                log.warning("redis unreachable (%s); lock %s left to expire", e, key)
    return JSONResponse({
        "review_id": str(rid), "document_id": doc_id, "status": "APPROVED",
        "document_status": "APPROVED", "version": version,
    })
