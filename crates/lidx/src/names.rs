//! Names of the library's fieldless enums (index kinds, distributions, RMI roots, I/O
//! backends, access patterns) as the command line, file names and CSV rows spell them:
//! one table per enum, from which `ALL`, `name`, `Display` and `FromStr` all follow.

use crate::Error;

/// Gives a fieldless enum its names from one table: `ALL` (every value, in the table's
/// order), `name`, `Display` and `FromStr`. An unknown name is an [`Error::InvalidParam`]
/// that names `$what` and lists every accepted name. Exported for the crates above the
/// library (`lidx::name_table!`), whose enums are named the same way.
#[macro_export]
#[doc(hidden)]
macro_rules! name_table {
    ($ty:ident, $what:literal, [$($variant:ident => $name:literal),+ $(,)?]) => {
        impl $ty {
            /// Every value, in the order their names are listed.
            pub const ALL: [$ty; [$($name),+].len()] = [$($ty::$variant),+];

            /// The name on the command line, in file names and in CSV rows.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::Error;

            fn from_str(s: &str) -> $crate::Result<Self> {
                $ty::ALL
                    .into_iter()
                    .find(|v| v.name() == s)
                    .ok_or_else(|| $crate::names::unknown($what, s, $ty::ALL.map($ty::name)))
            }
        }
    };
}

pub(crate) use crate::name_table;

/// The error for a name that is none of `names`.
#[doc(hidden)]
pub fn unknown<const N: usize>(what: &'static str, given: &str, names: [&str; N]) -> Error {
    Error::param(
        what,
        format!("'{given}' is not one of {}", names.join(", ")),
    )
}
