//! The command families of the `headspace` binary that outgrew `main.rs`.

pub mod orchestrate;
