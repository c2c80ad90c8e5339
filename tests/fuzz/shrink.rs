//! Delta debugging of a failing program: drop statements (each with everything that depends
//! on it) and returned values while the program still fails the same way, to a fixpoint.

use super::program::Program;

/// The smallest program found that `still_fails`, trying at most `budget` candidates.
pub fn shrink(
    program: &Program,
    budget: usize,
    mut still_fails: impl FnMut(&Program) -> bool,
) -> Program {
    let mut best = program.clone();
    let mut tries = 0;
    let mut attempt = |candidate: Program, best: &mut Program, tries: &mut usize| -> bool {
        if *tries >= budget {
            return false;
        }
        *tries += 1;
        if still_fails(&candidate) {
            *best = candidate;
            true
        } else {
            false
        }
    };
    let dead_free = best.without_dead_code();
    if dead_free.stmts.len() < best.stmts.len() {
        attempt(dead_free, &mut best, &mut tries);
    }
    loop {
        let mut progress = false;
        // Returned values first: each one dropped removes the code only it needed.
        let mut r = best.returns.len();
        while r > 0 {
            r -= 1;
            if let Some(candidate) = best.without_return(r) {
                if attempt(candidate.without_dead_code(), &mut best, &mut tries) {
                    progress = true;
                }
            }
        }
        let mut i = best.stmts.len();
        while i > 0 {
            i -= 1;
            if i >= best.stmts.len() {
                continue;
            }
            if let Some(candidate) = best.without_stmt(i) {
                if attempt(candidate, &mut best, &mut tries) {
                    progress = true;
                }
            }
        }
        for f in 0..best.functions.len() {
            let mut i = best.functions[f].body.len();
            while i > 0 {
                i -= 1;
                if i >= best.functions[f].body.len() {
                    continue;
                }
                if let Some(candidate) = best.without_function_stmt(f, i) {
                    if attempt(candidate, &mut best, &mut tries) {
                        progress = true;
                    }
                }
            }
        }
        if !progress || tries >= budget {
            return best;
        }
    }
}
