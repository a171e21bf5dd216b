//! The library's one error type. Each variant maps to a stable C status code, so the C layer never
//! has to guess how to report a failure.

/// Every failure the library reports. The message names the argument, the index and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A required pointer argument was NULL (raised only by the C layer).
    #[error("{0}")]
    NullArgument(String),
    /// An argument broke a documented rule (bad code, bad shape, mismatched sizes ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// A LoD broke one of the validity rules, or does not match the tensor it describes.
    #[error("{0}")]
    InvalidLod(String),
    /// An index or range lies outside what it indexes.
    #[error("{0}")]
    OutOfRange(String),
    /// A caller's buffer is too small for the result.
    #[error("{0}")]
    BufferTooSmall(String),
    /// A valid request this build or this dtype/place cannot serve.
    #[error("{0}")]
    Unsupported(String),
    /// An allocation failed or a size overflowed.
    #[error("{0}")]
    OutOfMemory(String),
    /// A bug inside the library (a caught panic, a broken invariant).
    #[error("{0}")]
    Internal(String),
    /// A caller-supplied callback reported a failure (its status is in the message).
    #[error("{0}")]
    CallbackFailed(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The same kind of error with `prefix` in front of its message, so an error of an inner step
    /// names the caller's argument.
    pub(crate) fn context(self, prefix: &str) -> Error {
        let wrap = |m: String| format!("{prefix}{m}");
        match self {
            Error::NullArgument(m) => Error::NullArgument(wrap(m)),
            Error::InvalidArgument(m) => Error::InvalidArgument(wrap(m)),
            Error::InvalidLod(m) => Error::InvalidLod(wrap(m)),
            Error::OutOfRange(m) => Error::OutOfRange(wrap(m)),
            Error::BufferTooSmall(m) => Error::BufferTooSmall(wrap(m)),
            Error::Unsupported(m) => Error::Unsupported(wrap(m)),
            Error::OutOfMemory(m) => Error::OutOfMemory(wrap(m)),
            Error::Internal(m) => Error::Internal(wrap(m)),
            Error::CallbackFailed(m) => Error::CallbackFailed(wrap(m)),
        }
    }
}

/// Shorthand constructors so call sites read as the rule they enforce.
macro_rules! err {
    ($kind:ident, $($fmt:tt)+) => {
        $crate::error::Error::$kind(format!($($fmt)+))
    };
}
pub(crate) use err;

/// `return Err(err!(..))` unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $kind:ident, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::error::err!($kind, $($fmt)+));
        }
    };
}
pub(crate) use ensure;
