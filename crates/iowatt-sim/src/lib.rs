//! The simulation core iowatt's simulators share (server cooling, RAID power policies, cluster
//! task packing).
//!
//! - [`EventQueue`]: a discrete-event schedule in integer nanoseconds. Events at the same time
//!   come out in the order they were scheduled, so a run never depends on the heap's tie-breaks.
//! - [`Streams`]: one seeded random stream per component, so adding a component or drawing
//!   more from one never shifts another's numbers. [`exponential`] draws with a portable `ln`
//!   (libm), so the same seed gives the same bits on any machine.
//! - [`thermal`]: compact RC networks (HotSpot style) integrated exactly over a fixed step. The
//!   step's matrices are precomputed once per network (per fan level), so a tick is one
//!   matrix-vector product.
//! - [`disk`]: one disk's model and state machine, shared by [`raid`] and the emulated disk.
//! - [`raid`]: the storage power-policy simulator.
//! - [`tasks`]: the task-packing simulator.
//! - [`server`]: the server cooling simulator built on them.
//! - [`mm1`]: the M/M/1 queue, the model with a known answer the core is checked against.

pub mod disk;
mod linalg;
pub mod mm1;
mod queue;
pub mod raid;
mod random;
pub mod server;
pub mod tasks;
pub mod thermal;

pub use queue::EventQueue;
pub use random::{exponential, Streams};
