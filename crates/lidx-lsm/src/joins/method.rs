//! Paper 5's 29 join methods (section 3.3, Table 4), named as the paper names them: a join
//! algorithm, which of the two tables are indexed by what, and for a secondary index its
//! design (section 3.1) and how it is kept consistent (section 3.2).
//!
//! R is the outer (left) table and S the inner (right). The shape says what each side
//! offers the join:
//!
//! | shape | S                              | R                 | joins                       |
//! |-------|--------------------------------|-------------------|-----------------------------|
//! | `P`   | its primary index              | a regular column  | R's attribute = S's key     |
//! | `N`   | a regular column               | a regular column  | R's attribute = S's attribute |
//! | `NS`  | a secondary index              | a regular column  | R's attribute = S's attribute |
//! | `PS`  | its primary index              | a secondary index | R's attribute = S's key     |
//! | `SS`  | a secondary index              | a secondary index | R's attribute = S's attribute |
//!
//! The 29: `INLJ-P`, `SJ-P`, `HJ-P`, `SJ-N`, `HJ-N`, and each of `INLJ-NS`, `SJ-PS`,
//! `SJ-NS`, `SJ-SS` with every consistency (`S` synchronous, `V` validation) and design
//! (`Eager`, `Lazy`, `Comp`), e.g. `INLJ-NS/S-Eager`. Beside them, the hybrid hash join of
//! section 5.4 (Fig. 13b) in the two shapes a hash join takes: `HHJ-P`, `HHJ-N`. As in the paper's code, a synchronous
//! index is covering (its entries carry the rest of the row) and a validation index is not.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A join algorithm (section 3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Index nested loop join: R scanned, S looked up per row.
    Inlj,
    /// Sort-merge join: each side sorted by the join attribute unless an index gives that
    /// order already.
    Sj,
    /// Grace hash join.
    Hj,
    /// Hybrid hash join (section 5.4, Fig. 13b): grace's partitions, those of R that fit
    /// the join memory kept in it. Not among Table 4's 29: shapes `P` and `N` only.
    Hhj,
}

/// Which tables are indexed by what (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// S by its primary key; R's attribute joins S's key.
    P,
    /// No index.
    N,
    /// S by a secondary index.
    Ns,
    /// S by its primary key, R by a secondary index.
    Ps,
    /// Both by secondary indexes.
    Ss,
}

/// A secondary index's design (section 3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Design {
    /// Attribute → posting list, read-modify-written on every update.
    Eager,
    /// Attribute → posting list, appended blindly by a merge operator and gathered across
    /// levels when read.
    Lazy,
    /// One entry per row, keyed by attribute ‖ primary key, read by prefix.
    Comp,
}

/// How a secondary index is kept consistent with its data table (section 3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Maintenance {
    /// Algorithm 1: an update looks up the row's old attribute and removes its entry.
    Sync,
    /// Algorithm 2: updates only insert; every hit is checked against the data table when
    /// the index is read.
    Validation,
}

/// The join a method answers: R's attribute against S's primary key (the `P` and `PS`
/// shapes), or against S's attribute (`N`, `NS`, `SS`). A schema asks one of them; the
/// methods of the other answer a different question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JoinOn {
    /// R.attr = S.key.
    Key,
    /// R.attr = S.attr.
    Attribute,
}

impl JoinOn {
    /// `key` or `attribute`.
    pub fn name(self) -> &'static str {
        match self {
            JoinOn::Key => "key",
            JoinOn::Attribute => "attribute",
        }
    }

    /// The join as an equation: `R.attr = S.key`.
    pub fn equation(self) -> &'static str {
        match self {
            JoinOn::Key => "R.attr = S.key",
            JoinOn::Attribute => "R.attr = S.attr",
        }
    }
}

/// Which table a secondary index belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The outer table.
    R,
    /// The inner table.
    S,
}

/// A secondary index: its table, design and consistency, and whether its entries carry
/// the rest of the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexSpec {
    /// The table it indexes.
    pub side: Side,
    /// Its design.
    pub design: Design,
    /// How it is kept consistent.
    pub maintenance: Maintenance,
    /// Whether its entries carry the rest of the row.
    pub covering: bool,
}

impl IndexSpec {
    /// The index a method of `maintenance` and `design` uses on `side`: covering exactly
    /// when synchronous, as the paper's code builds them.
    pub fn of_method(side: Side, design: Design, maintenance: Maintenance) -> IndexSpec {
        IndexSpec {
            side,
            design,
            maintenance,
            covering: maintenance == Maintenance::Sync,
        }
    }

    /// The name of its directory in a database: `r.eager-sync`, `s.comp-validation-covering`.
    pub fn dir_name(&self) -> String {
        format!(
            "{}.{}-{}{}",
            self.side,
            self.design.name().to_lowercase(),
            self.maintenance.name(),
            if self.covering { "-covering" } else { "" }
        )
    }
}

/// One of the 29 join methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Method {
    /// The join algorithm.
    pub algorithm: Algorithm,
    /// What each side offers.
    pub shape: Shape,
    /// The secondary indexes' consistency and design (shapes `NS`, `PS`, `SS` only).
    pub index: Option<(Maintenance, Design)>,
}

impl Method {
    /// All 29, in the paper's order: the five without a secondary index, then each indexed
    /// shape with synchronous then validation indexes, Eager, Lazy, Comp.
    pub fn all() -> Vec<Method> {
        use Algorithm::*;
        let plain = [
            (Inlj, Shape::P),
            (Sj, Shape::P),
            (Hj, Shape::P),
            (Sj, Shape::N),
            (Hj, Shape::N),
        ];
        let mut all: Vec<Method> = plain
            .into_iter()
            .map(|(algorithm, shape)| Method {
                algorithm,
                shape,
                index: None,
            })
            .collect();
        for (algorithm, shape) in [
            (Inlj, Shape::Ns),
            (Sj, Shape::Ps),
            (Sj, Shape::Ns),
            (Sj, Shape::Ss),
        ] {
            for maintenance in [Maintenance::Sync, Maintenance::Validation] {
                for design in [Design::Eager, Design::Lazy, Design::Comp] {
                    all.push(Method {
                        algorithm,
                        shape,
                        index: Some((maintenance, design)),
                    });
                }
            }
        }
        all
    }

    /// The hybrid hash joins of section 5.4 (Fig. 13b): `HHJ-P` and `HHJ-N`.
    pub fn hybrid() -> Vec<Method> {
        [Shape::P, Shape::N]
            .into_iter()
            .map(|shape| Method {
                algorithm: Algorithm::Hhj,
                shape,
                index: None,
            })
            .collect()
    }

    /// Every method lidx runs: the 29 of Table 4, then the two hybrid hash joins.
    pub fn every() -> Vec<Method> {
        let mut every = Method::all();
        every.extend(Method::hybrid());
        every
    }

    /// Whether R's attribute joins S's primary key (the `P` family) rather than S's
    /// attribute.
    pub fn joins_s_key(&self) -> bool {
        matches!(self.shape, Shape::P | Shape::Ps)
    }

    /// The join the method answers.
    pub fn joins_on(&self) -> JoinOn {
        if self.joins_s_key() {
            JoinOn::Key
        } else {
            JoinOn::Attribute
        }
    }

    /// The secondary indexes the method reads.
    pub fn indexes(&self) -> Vec<IndexSpec> {
        let Some((maintenance, design)) = self.index else {
            return Vec::new();
        };
        let sides: &[Side] = match self.shape {
            Shape::Ns => &[Side::S],
            Shape::Ps => &[Side::R],
            Shape::Ss => &[Side::R, Side::S],
            Shape::P | Shape::N => &[],
        };
        sides
            .iter()
            .map(|&side| IndexSpec::of_method(side, design, maintenance))
            .collect()
    }
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Inlj => "INLJ",
            Algorithm::Sj => "SJ",
            Algorithm::Hj => "HJ",
            Algorithm::Hhj => "HHJ",
        }
    }
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::P => "P",
            Shape::N => "N",
            Shape::Ns => "NS",
            Shape::Ps => "PS",
            Shape::Ss => "SS",
        }
    }
}

impl Design {
    /// `Eager`, `Lazy` or `Comp`, as in the methods' names.
    pub fn name(self) -> &'static str {
        match self {
            Design::Eager => "Eager",
            Design::Lazy => "Lazy",
            Design::Comp => "Comp",
        }
    }
}

impl Maintenance {
    /// `sync` or `validation`.
    pub fn name(self) -> &'static str {
        match self {
            Maintenance::Sync => "sync",
            Maintenance::Validation => "validation",
        }
    }

    /// `S` or `V`, as in the methods' names.
    fn letter(self) -> &'static str {
        match self {
            Maintenance::Sync => "S",
            Maintenance::Validation => "V",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::R => "r",
            Side::S => "s",
        })
    }
}

impl fmt::Display for Method {
    /// The paper's name: `INLJ-P`, `SJ-NS/S-Eager`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.algorithm.name(), self.shape.name())?;
        if let Some((maintenance, design)) = self.index {
            write!(f, "/{}-{}", maintenance.letter(), design.name())?;
        }
        Ok(())
    }
}

impl FromStr for Method {
    type Err = String;

    /// One of the 31 names, as [`Display`](fmt::Display) writes them (case-insensitive).
    fn from_str(s: &str) -> Result<Method, String> {
        Method::every()
            .into_iter()
            .find(|m| m.to_string().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "'{s}' is not one of paper 5's join methods (`lidx lsm methods` lists them)"
                )
            })
    }
}

macro_rules! parse_by_name {
    ($ty:ty, $what:literal, [$($v:expr),+]) => {
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<$ty, String> {
                [$($v),+]
                    .into_iter()
                    .find(|v: &$ty| v.name().eq_ignore_ascii_case(s))
                    .ok_or_else(|| format!(concat!("'{}' is not ", $what), s))
            }
        }
    };
}

parse_by_name!(
    JoinOn,
    "a join: key (R.attr = S.key) or attribute (R.attr = S.attr)",
    [JoinOn::Key, JoinOn::Attribute]
);
parse_by_name!(
    Design,
    "an index design: eager, lazy or comp",
    [Design::Eager, Design::Lazy, Design::Comp]
);
parse_by_name!(
    Maintenance,
    "a consistency strategy: sync or validation",
    [Maintenance::Sync, Maintenance::Validation]
);

impl FromStr for Side {
    type Err = String;
    fn from_str(s: &str) -> Result<Side, String> {
        match s {
            "r" | "R" => Ok(Side::R),
            "s" | "S" => Ok(Side::S),
            _ => Err(format!("'{s}' is not a table: r or s")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_29_methods_with_distinct_names_that_parse_back() {
        let all = Method::all();
        assert_eq!(all.len(), 29);
        let names: std::collections::HashSet<String> = all.iter().map(|m| m.to_string()).collect();
        assert_eq!(names.len(), 29);
        for m in &all {
            assert_eq!(m.to_string().parse::<Method>(), Ok(*m));
        }
        assert_eq!(all[0].to_string(), "INLJ-P");
        assert!(names.contains("INLJ-NS/S-Eager"));
        assert!(names.contains("SJ-SS/V-Comp"));
        assert!("INLJ-N".parse::<Method>().is_err());
        let every = Method::every();
        assert_eq!(every.len(), 31);
        let names: std::collections::HashSet<String> =
            every.iter().map(|m| m.to_string()).collect();
        assert_eq!(names.len(), 31);
        for m in &every {
            assert_eq!(m.to_string().parse::<Method>(), Ok(*m));
        }
        assert!(names.contains("HHJ-P") && names.contains("HHJ-N"));
        assert!("HHJ-NS/S-Eager".parse::<Method>().is_err());
    }

    #[test]
    fn methods_name_the_indexes_they_read() {
        let m: Method = "SJ-SS/V-Lazy".parse().unwrap_or_else(|e| panic!("{e}"));
        let specs = m.indexes();
        assert_eq!(specs.len(), 2);
        assert!(
            specs
                .iter()
                .all(|s| s.design == Design::Lazy && !s.covering)
        );
        let m: Method = "SJ-PS/S-Comp".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(m.joins_s_key());
        assert_eq!(m.indexes()[0].side, Side::R);
        assert!(m.indexes()[0].covering);
        assert_eq!(m.indexes()[0].dir_name(), "r.comp-sync-covering");
    }
}
