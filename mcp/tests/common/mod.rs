//! Helpers the MCP adapter's integration tests share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use strata_mcp::{Options, Server};
use strata_store::{OpenOptions, Store};

/// A server over a new, empty database in `dir`.
pub fn empty_server(dir: &Path) -> Server {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    Server::new(store, strata_mcp::Pack::default(), Options::default()).unwrap()
}
