//! Why a server could not be built ([`ServerError`]): the application's [`OpenError`],
//! whose variants name what was wrong (the store, the pack, the modules, an example, the
//! limits or the host's arguments).

pub use strata_app::OpenError;

/// Why a server could not be built: the application could not be opened, or the host's
/// arguments do not fit the tools.
pub type ServerError = OpenError;
