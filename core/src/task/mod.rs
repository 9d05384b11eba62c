//! Tasks: the states of one unit of work and the table of their transitions, what a turn's
//! text means for its task, the question an agent waits on, and when it counts as idle.

pub mod intent;
pub mod question;
pub mod state;
pub mod wait;
