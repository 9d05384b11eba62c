//! Many machines on one shared database (docs/multi-machine.md): when a machine counts as
//! alive, which machine holds a project, commands to another machine's panes, and the
//! shared events table read back in order.

pub mod event_feed;
pub mod machines;
pub mod pane_commands;
pub mod project_machine;
