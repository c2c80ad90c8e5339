//! A differential fuzzer of the two backends, in the manner of Csmith and SQLancer: it
//! generates random well-typed HorseIR programs over the TPC-H tables, runs each on the CPU
//! backend (the oracle) and on the GPU backend, and reports every program where they
//! disagree, shrunk to a small reproduction printed as a `.hir` file.
//!
//! # What it generates ([`generate`])
//! A program is a module with a few user functions and a `main` of 3 to 12 statements (some
//! of them compound) that returns one to four of the values it computed. The generator
//! tracks each variable's static type and its shape (a scalar, or a vector of a *length
//! class*: a table, a mask's selection, a group, a join, a literal length), and covers:
//! - columns of all eight TPC-H tables (`check_cast(@column_value(...))`), foreign keys
//!   through `@values` of their enums, scalar and vector literals of ten types;
//! - element-wise arithmetic, comparisons and logic (`@and @or @nand @nor @xor`) across types
//!   (the type rules decide, so bools, i16, i32, i64, f32, f64, dates, chars and text all meet),
//!   with literal operands that broadcast, and a few math and date builtins (`@mod`, `@fact`,
//!   `@power`, `@logb`, date parts, `@datetime_add`/`@datetime_sub` of dates by years, months or
//!   days, `@datetime_diff` of two dates);
//! - every floating function of one argument (`@exp @log @log2 @log10`, trigonometric,
//!   inverse trigonometric, hyperbolic and inverse hyperbolic, `@pi`; `generate::FLOAT_FUNCTIONS`)
//!   of f32, f64, integer and bool values, in kernels, user functions and loop updates, and in
//!   statements of their own whose argument is first divided into the functions' domains or
//!   by zero (infinities, NaN), multiplied down to f32 subnormals (NVIDIA flushes them where
//!   the CPU keeps them), or converted to f32 or f64 by a declaration, and whose result
//!   is sometimes declared in the other precision or fed to a second function: the GPU
//!   computes the f32 ones in f64 in its kernels, and runs the f64 ones on the CPU;
//! - `@compress`, `@where`, `@index` (with positions from `@where`, `@unique`, `@order`,
//!   joins, groups, foreign keys, `@range(@len(x))`, or literals of 1 to 4 positions and,
//!   now and then, of 17 to 24: a statement of its own, gathered on the device), reductions,
//!   `@len`, `@vector`, `@range`, `@reverse`, `@take`/`@drop` (by more than there are too),
//!   `@append`;
//! - `@group` on one or two key columns with `@each_right(@index, ...)`, `@each` of a
//!   reduction and `@raze`, and `@each` of a reduction over `@tolist`'s one-element cells;
//!   the shape of a grouped kernel (a bool, i8 or i16 key computed
//!   in the kernel, at times with a char column, the rows kept by a mask, `@sum`, `@len`
//!   and `@avg` per group: about one program in 35 forms one, against one in 4,000 from
//!   the general group-by); `@join_index` with `@eq` (and `@lt`/`@neq`/`@geq` on small
//!   inputs); `@member`, `@unique`, `@order` on one or two keys;
//! - `@like` with str and sym patterns, `@sub_string`;
//! - user functions with scalar and vector parameters (literals passed as scalars, functions
//!   called again with other arguments, reductions inside functions);
//! - `if`/`else`, `while` and `repeat` carrying a value, whose update is sometimes a call of
//!   a user function.
//!
//! Every call's result type comes from the compiler's type rules
//! ([`horsec::sema::rules::builtin_result`]), so programs type-check by construction and stay
//! well typed as the rules change; a program the front end rejects is reported as a
//! disagreement of kind `Invalid` (a generator bug, or a rule the checker applies differently).
//! With probability `error_rate` a statement is wrong on purpose: operands of different
//! lengths, a mask from another table, an index out of range, a negative count, a bad
//! `@sub_string` range, an `if` on a vector. Lengths the front end proves different
//! (literals) are a compile error for both backends (`analysis::mismatch`): the same
//! refusal, not a front-end rejection.
//!
//! # How it compares ([`check`])
//! The program is compiled for each backend: a front-end error (parse, types) is one outcome
//! for both; an error of the GPU compiler's own stages is the GPU's outcome. The backends
//! agree when both return values of the same types, equal to the static types the generator
//! declared, with equal TSV text (floats within a relative 1e-9; in a program that computes in
//! f32 anywhere, within 256 f32 ulp, see [`check::F32_TOLERANCE`]: an f32 function's rare
//! rounding near a midpoint, amplified, and a device compiler's contractions; a float that
//! depends on a summation order also within the bound of its terms, see [`bound`]; values of
//! other types exactly; the summary prints the largest difference the tolerances let
//! through; but a float that depends on no summation order, in a program that computes in
//! f64 only or calls no floating function but `@pi`, to the last digit, see
//! [`check::rounded_apart`]: both backends compute it by the same correctly rounded steps,
//! and the relative tolerance let a shader compiler's regrouping through), or when both
//! refuse with the same message text (locations may differ: a fused kernel reports its
//! first statement). A panic on either side is always a disagreement.
//!
//! # Non-finite floats
//! WGSL lets a shader compiler assume that floats are finite, and compilers use it: Mesa
//! folds `x - x` to 0 and `0 / x` to 0, NVIDIA `x / x` to 1, which are wrong for NaN and
//! infinities (the CPU follows IEEE 754). The generated code therefore decides every
//! result that IEEE makes NaN on the operands' bits (`codegen::wgsl::Helper::IeeeF64`), and
//! NaN rows are compared like any other (`NaN` prints as `NaN` on both backends; as keys every
//! NaN is one value). `HORSEC_FUZZ_NONFINITE=lenient` lets a row where the CPU computed NaN or
//! an infinity match any GPU value, to look past that class on a device that breaks it some
//! other way.
//!
//! # Summation order
//! A float `@sum` or `@avg` (and a group's, through `@each`) is added in another order on
//! each backend: the CPU folds left to right, the GPU in a tree of threads (and a long
//! group's cell in pieces), so the two results may differ in their last bits. Both are
//! right; neither backend promises an order (making the GPU fold in the CPU's order would
//! serialise every reduction, and an exactly rounded sum costs an accumulator of 2,100 bits
//! per thread). Compared as numbers they agree within the tolerance, or, where the terms
//! cancel (a sum of 0 computed as 1e-10 on one backend), within a bound of the terms'
//! magnitudes that a sibling program computes on the CPU ([`bound`]). But a *discrete* decision
//! on such a value amplifies an ulp into a different answer: `@mod(sum, key)` where
//! `sum / key` is an integer (a group of equal values) gives about 0 on one backend and about
//! `key` on the other, `@eq`/`@lt` of two sums flip, `@order`/`@unique`/`@member`/`@group`
//! on group means tie differently. Exact comparison cannot judge those programs, so the
//! generator does not write them: a float summed, and what is computed from it, is
//! *reordered* ([`program::Var::reordered`]) and feeds only continuous element-wise builtins
//! (`generate::CONTINUOUS`: `+ - *`, `@abs`, `@neg`, `@sqrt`, `@exp`) and the values
//! returned, never a comparison, `@mod`, a rounding to an integer, a division (near zero), a
//! key of `@member`/`@unique`/`@order`/`@group`/`@join_index`/`@index_of`, or a user function
//! (whose body may compare). `corpus/limits/mod_of_a_quotient_near_an_integer.hir` is such a
//! program, kept as the example, and the test `generated_programs_decide_nothing_on_a_summation_order`
//! checks that generated programs avoid the class.
//!
//! # Shrinking
//! A failing program is shrunk by delta debugging ([`shrink`]): drop a statement of `main`
//! (a compound statement, a loop or a group-by, is one unit) with everything that depends
//! on it, drop a returned value, drop a statement of a user function, while the program
//! still disagrees in the same way ([`check::Kind`]), to a fixpoint. The result is printed
//! as a whole `.hir` module with what each backend did.
//!
//! # Saved reproductions
//! `corpus/*.hir` are shrunk findings whose fix has landed: the test `saved_reproductions_agree`
//! requires both backends to agree on each. `corpus/open/*.hir` are findings not fixed yet:
//! they run and are listed, without failing; one that agrees is listed to be moved up.
//! `corpus/limits/*.hir` are programs on which the backends may rightly disagree (a limit of
//! exact comparison the generator avoids, explained in each file): no test runs them.
//!
//! # Throughput
//! Measured on lavapipe on the 2-core development machine (shared with other builds, load
//! average 7 to 10), two jobs: 68 programs per second before jobs kept their engine, 70 to
//! 100 after. Generating, compiling for both backends, running on the CPU and comparing
//! take about 1.5 ms per program together; the rest is the GPU run (17 to 26 ms per program
//! and job on lavapipe): a third of it compiling compute pipelines (a random program brings
//! about 1.5 kernels whose WGSL its device has not seen; lavapipe compiles each with LLVM),
//! the rest submissions and waits. The summary prints this split for every run (`compiling
//! pipelines` is the device's own count of the time spent creating them).
//! - Each job keeps one [`GpuEngine`](horsec_runtime::engine::GpuEngine) per device, so the
//!   columns it uploaded stay on the device for the next program (the engine keeps a clone
//!   of each uploaded value, so an address is never reused for another value).
//! - Each job has its own device by default (`HORSEC_FUZZ_DEVICES` shares fewer): sharing
//!   one saves few pipelines (random programs rarely share a kernel: 863 against 896
//!   compiled for 600 programs) and makes jobs wait for each other's submissions.
//! - A device is reopened every `HORSEC_FUZZ_RECYCLE` programs (default 2000): its pipeline
//!   cache only grows (about 0.4 MB per pipeline on lavapipe), and opening a device costs
//!   a fraction of a second.
//!
//! Names are canonical (numbered in order of appearance), so programs of the same structure
//! share pipelines.
//!
//! # Reproducing
//! Program `i` of a run with seed `S` has its own seed ([`rng::program_seed`]), printed with
//! every failure; `HORSEC_FUZZ_ONE=<program seed>` runs that program alone and prints it.
//! A seed names a program for one version of the generator: findings worth keeping are saved
//! as `.hir` files in `corpus/`.
//! See `tests/differential_fuzz.rs` for the environment variables of a run.

pub mod bound;
pub mod check;
pub mod generate;
pub mod program;
pub mod rng;
pub mod shrink;
