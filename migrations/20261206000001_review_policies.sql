-- Review policies (ordered stages of N-of-M approvals, eligible groups, due dates, claim
-- lifetimes), the votes cast on a review, the claims reviewers hold on one, withdrawal, and
-- the once-only overdue mark. Existing documents and reviews get the built-in `default`
-- policy: one stage, one approval, any reviewer, no due date (what they had).

-- A policy's current version; its row is what a policy write locks to take the next number.
CREATE TABLE policies (
    name       text PRIMARY KEY
        CONSTRAINT policies_name_shape CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    version    integer     NOT NULL CONSTRAINT policies_version_positive CHECK (version >= 1),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every version ever written; a review refers to the one current at its submit.
CREATE TABLE policy_versions (
    name           text        NOT NULL REFERENCES policies (name),
    version        integer     NOT NULL,
    -- [{"name": ..., "required_approvals": 1..5, "eligible_groups": [...]}, ...]
    stages         jsonb       NOT NULL
        CONSTRAINT policy_versions_stages_array CHECK (jsonb_typeof(stages) = 'array' AND jsonb_array_length(stages) >= 1),
    due_after_secs integer
        CONSTRAINT policy_versions_due_range CHECK (due_after_secs BETWEEN 1 AND 31536000),
    claim_ttl_secs integer     NOT NULL
        CONSTRAINT policy_versions_claim_ttl_range CHECK (claim_ttl_secs BETWEEN 60 AND 86400),
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

INSERT INTO policies (name, version) VALUES ('default', 1);
INSERT INTO policy_versions (name, version, stages, due_after_secs, claim_ttl_secs, created_by)
VALUES ('default', 1, '[{"name": "review", "required_approvals": 1, "eligible_groups": []}]',
        NULL, 1800, 'kh-review');

-- Constant defaults: no table rewrite, existing rows read 'default'.
ALTER TABLE documents ADD COLUMN policy text NOT NULL DEFAULT 'default' REFERENCES policies (name);

ALTER TABLE reviews
    ADD COLUMN policy         text    NOT NULL DEFAULT 'default',
    ADD COLUMN policy_version integer NOT NULL DEFAULT 1,
    -- Index of the current stage in the policy's stages.
    ADD COLUMN stage          integer NOT NULL DEFAULT 0 CONSTRAINT reviews_stage_positive CHECK (stage >= 0),
    ADD COLUMN due_at         timestamptz,
    -- Set, once, in the transaction that writes the review's review.overdue event.
    ADD COLUMN overdue_notified_at timestamptz,
    ADD CONSTRAINT reviews_policy_version_fk FOREIGN KEY (policy, policy_version)
        REFERENCES policy_versions (name, version);

ALTER TABLE reviews DROP CONSTRAINT reviews_status_known;
ALTER TABLE reviews ADD CONSTRAINT reviews_status_known
    CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'WITHDRAWN'));

-- One vote per person per review, across its stages.
CREATE TABLE review_votes (
    review_id   uuid        NOT NULL REFERENCES reviews (id),
    voter_id    text        NOT NULL,
    stage       integer     NOT NULL,
    vote        text        NOT NULL CONSTRAINT review_votes_vote_known CHECK (vote IN ('APPROVE', 'REJECT')),
    comment     text,
    -- The fencing token of the voter's outer lock, when the vote ran under one.
    fence_token bigint,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (review_id, voter_id)
);

-- A seat held on a review's current stage. A claim past expires_at holds nothing and is
-- replaced by the next claim of anyone; no sweeper deletes it.
CREATE TABLE review_claims (
    review_id   uuid        NOT NULL REFERENCES reviews (id),
    reviewer_id text        NOT NULL,
    stage       integer     NOT NULL,
    claimed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (review_id, reviewer_id)
);
