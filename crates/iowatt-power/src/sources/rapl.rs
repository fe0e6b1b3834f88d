//! Placeholder until the rapl source lands.

use crate::source::{ClockAnchor, Source};
use crate::{PowerError, SourceConfig};

pub fn open(config: &SourceConfig, _anchor: ClockAnchor) -> Result<Box<dyn Source>, PowerError> {
    Err(PowerError::unavailable(
        format!("source `{}` is not built yet", config.name),
        "",
    ))
}
