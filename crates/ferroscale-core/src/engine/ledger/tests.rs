//! The ledger's own rules; the methods' use of it is tested through the loop.
