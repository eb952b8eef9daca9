//! Screens arrange components; they hold no logic of their own.

pub mod home;
pub mod live;
pub mod prepare;
