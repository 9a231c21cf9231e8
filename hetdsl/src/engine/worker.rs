//! One host thread per device.
