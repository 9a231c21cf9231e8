//! Executes a launch.
use super::Launch;
use crate::balance::Balancer;
use crate::error::Result;
use crate::report::Report;

pub(crate) fn execute(_launch: Launch<'_>, _balancer: Box<dyn Balancer>) -> Result<Report> {
    todo!("engine under construction")
}
