//! Claude Code's hooks: installing Headspace's into a settings file, and the hook command
//! that forwards each payload to the server without ever blocking Claude Code.

pub mod forward;
pub mod install;
