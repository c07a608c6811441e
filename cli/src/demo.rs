//! `ferrolock demo`: placeholder.
