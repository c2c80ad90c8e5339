//! Which thread geometries may share a kernel.
//!
//! Two statements fuse when one launch can run both: their geometries are equal, one of them
//! is a scalar (every thread computes it), or — when masking is allowed — one runs over a
//! compressed size `Compressed(n, mask)` and the other over `n`: the compressed statement then
//! runs masked inside the kernel of geometry `n` (rNdN's compressed geometry). Vector and list
//! geometries never fuse with each other; list geometries need the same number of cells.

use crate::analysis::{Geometry, Size};

/// How far two geometries may differ and still fuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fusion {
    /// Equal geometries (a scalar fuses with any vector geometry).
    Identical,
    /// Also a compressed geometry inside the geometry it was compressed from.
    Masked,
}

/// A single thread's worth of work: `Vector(Constant(1))`.
pub fn is_scalar(geometry: &Geometry) -> bool {
    matches!(geometry, Geometry::Vector(size) if size.is_scalar())
}

/// True when `inner` is `outer` itself or `outer` compressed by one or more masks.
fn masks_into(outer: &Size, inner: &Size) -> bool {
    if outer == inner {
        return true;
    }
    match inner {
        Size::Compressed(base, _) => masks_into(outer, base),
        _ => false,
    }
}

fn merge_sizes(a: &Size, b: &Size, fusion: Fusion) -> Option<Size> {
    if a == b || b.is_scalar() {
        return Some(a.clone());
    }
    if a.is_scalar() {
        return Some(b.clone());
    }
    if fusion == Fusion::Masked {
        if masks_into(a, b) {
            return Some(a.clone());
        }
        if masks_into(b, a) {
            return Some(b.clone());
        }
    }
    None
}

/// The launch geometry of a kernel running statements of geometries `a` and `b`, or `None`
/// when they cannot share one.
pub fn merge_geometry(a: &Geometry, b: &Geometry, fusion: Fusion) -> Option<Geometry> {
    match (a, b) {
        (Geometry::Vector(x), Geometry::Vector(y)) => {
            merge_sizes(x, y, fusion).map(Geometry::Vector)
        }
        (
            Geometry::List {
                cells: cells_a,
                cell: cell_a,
            },
            Geometry::List {
                cells: cells_b,
                cell: cell_b,
            },
        ) if cells_a == cells_b => merge_sizes(cell_a, cell_b, fusion).map(|cell| Geometry::List {
            cells: cells_a.clone(),
            cell,
        }),
        _ => None,
    }
}

/// True when a statement of geometry `statement` runs masked inside a kernel of geometry
/// `kernel` (it covers fewer elements than the launch, selected by a mask).
pub fn runs_masked(statement: &Geometry, kernel: &Geometry) -> bool {
    statement != kernel && !is_scalar(statement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::defuse::DefSite;
    use crate::analysis::shape::Mask;
    use crate::analysis::statements::StmtId;
    use crate::sema::typed::LocalId;

    fn lineitem() -> Size {
        Size::rows("lineitem")
    }

    fn compressed(size: Size, local: usize) -> Size {
        Size::compressed(
            size,
            Mask {
                local: LocalId(local),
                def: DefSite::Stmt(StmtId(local)),
            },
        )
    }

    #[test]
    fn equal_geometries_fuse_and_scalars_fuse_with_any_vector() {
        let rows = Geometry::Vector(lineitem());
        let scalar = Geometry::Vector(Size::Constant(1));
        assert_eq!(
            merge_geometry(&rows, &rows, Fusion::Identical),
            Some(rows.clone())
        );
        assert_eq!(
            merge_geometry(&scalar, &rows, Fusion::Identical),
            Some(rows.clone())
        );
        assert_eq!(
            merge_geometry(
                &Geometry::Vector(Size::rows("orders")),
                &rows,
                Fusion::Masked
            ),
            None
        );
    }

    #[test]
    fn a_compressed_geometry_fuses_masked_into_its_full_size_only_when_allowed() {
        let rows = Geometry::Vector(lineitem());
        let filtered = Geometry::Vector(compressed(compressed(lineitem(), 3), 5));
        assert_eq!(merge_geometry(&rows, &filtered, Fusion::Identical), None);
        assert_eq!(
            merge_geometry(&filtered, &rows, Fusion::Masked),
            Some(rows.clone())
        );
        assert!(runs_masked(&filtered, &rows));
        assert!(!runs_masked(&Geometry::Vector(Size::Constant(1)), &rows));
        // Two different masks of the same size are not nested in one another.
        let other = Geometry::Vector(compressed(lineitem(), 4));
        let first = Geometry::Vector(compressed(lineitem(), 3));
        assert_eq!(merge_geometry(&first, &other, Fusion::Masked), None);
    }

    #[test]
    fn list_geometries_fuse_over_the_same_cells_and_never_with_vectors() {
        let cells = Size::Dynamic(crate::analysis::shape::DynamicId(0));
        let list = Geometry::List {
            cells: cells.clone(),
            cell: Size::Dynamic(crate::analysis::shape::DynamicId(1)),
        };
        assert_eq!(
            merge_geometry(&list, &list, Fusion::Identical),
            Some(list.clone())
        );
        assert_eq!(
            merge_geometry(&list, &Geometry::Vector(cells), Fusion::Masked),
            None
        );
        assert_eq!(
            merge_geometry(&list, &Geometry::Vector(Size::Constant(1)), Fusion::Masked),
            None
        );
    }
}
