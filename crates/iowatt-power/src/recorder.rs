//! Placeholder: the recorder opens every source, runs each on its own thread and collects
//! readings and events.

pub struct Recorder;
