//! The errors of one service that both the JSON API and the console answer, mapped to the
//! error envelope: `ReplayError`, `PolicyError`, `SpaceError` and `WebhookError`.

use actix_web::http::StatusCode;

use super::error::{ApiError, ErrorCode};
use crate::domain::SpaceRefusal;
use crate::usecases::{PolicyError, ReplayError, SpaceError, WebhookError};

impl From<ReplayError> for ApiError {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::NotFound(_) => ApiError::not_found(e.to_string()),
            ReplayError::Running(_) => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::ReplayRunning,
                e.to_string(),
            ),
            ReplayError::NoSuchQueue(_) => ApiError::validation(format!("target_queue: {e}")),
            ReplayError::TargetNotAllowed(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::ReplayTargetNotAllowed,
                format!("target_queue: {e}"),
            ),
            ReplayError::Finished(..) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::InvalidState, e.to_string())
            }
            ReplayError::KeyTakenOver => ApiError::in_flight(
                "a retry with this Idempotency-Key took over; retry to get its result",
            ),
            ReplayError::Broker(cause) => ApiError::unavailable("RabbitMQ", cause),
            ReplayError::Store(s) => s.into(),
        }
    }
}

impl From<PolicyError> for ApiError {
    fn from(e: PolicyError) -> Self {
        match e {
            PolicyError::BuiltIn => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::ValidationFailed,
                e.to_string(),
            ),
            PolicyError::Store(s) => s.into(),
        }
    }
}

impl From<SpaceError> for ApiError {
    fn from(e: SpaceError) -> Self {
        match e {
            SpaceError::NotFound => ApiError::not_found(e.to_string()),
            SpaceError::Forbidden(msg) => ApiError::forbidden(msg),
            SpaceError::Refused(r) => match r {
                SpaceRefusal::NoSuchSpace | SpaceRefusal::NoSuchMember(_) => {
                    ApiError::not_found(r.to_string())
                }
                SpaceRefusal::Taken(_) => ApiError::new(
                    StatusCode::CONFLICT,
                    ErrorCode::AlreadyExists,
                    r.to_string(),
                ),
                SpaceRefusal::UnknownPolicy(_) => {
                    ApiError::validation(format!("default_policy: {r}"))
                }
                SpaceRefusal::LastSpaceAdmin => ApiError::forbidden(r.to_string()),
            },
            SpaceError::KeyTakenOver => ApiError::in_flight(
                "a retry with this Idempotency-Key took over; retry to get its result",
            ),
            SpaceError::Store(s) => s.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::NotFound(_) => ApiError::not_found(e.to_string()),
            WebhookError::Forbidden => ApiError::forbidden(e.to_string()),
            WebhookError::Invalid(..) => ApiError::validation(e.to_string()),
            WebhookError::Refused(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::InvalidState, e.to_string())
            }
            WebhookError::Store(s) => s.into(),
        }
    }
}
