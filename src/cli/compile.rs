//! `horsec check` and `horsec compile --emit …`: every stage's printer.

use super::*;

pub(super) fn check(files: &[PathBuf]) -> bool {
    let mut all_ok = true;
    for file in files {
        all_ok &= compile_file(file, Stage::Analyze, Backend::Cpu).is_some();
    }
    all_ok
}

pub(super) fn compile_command(
    file: &Path,
    emit: Emit,
    out: Option<&Path>,
    backend: Backend,
) -> bool {
    let until = match emit {
        Emit::Hir | Emit::Ast => Stage::Parse,
        Emit::Typed => Stage::Analyze,
        Emit::Shapes | Emit::Outline | Emit::Dot | Emit::Wgsl => Stage::Outline,
        Emit::Plan => Stage::Plan,
    };
    let Some(c) = compile_file(file, until, backend) else {
        return false;
    };
    if let Emit::Wgsl = emit {
        return emit_wgsl(file, &c, out);
    }
    let (text, ext) = match emit {
        Emit::Hir => match &c.datalog {
            Some(lowered) => (Some(lowered.hir.clone()), "hir"),
            None => (
                c.ast.as_ref().map(crate::syntax::printer::print_program),
                "hir",
            ),
        },
        Emit::Ast => (
            c.ast.as_ref().map(crate::syntax::printer::print_program),
            "hir",
        ),
        Emit::Typed => (
            c.typed.as_ref().map(crate::sema::printer::print_typed),
            "typed.hir",
        ),
        Emit::Shapes => (
            outlined_text(&c, crate::outline::print_all_shapes),
            "shapes",
        ),
        Emit::Outline => (
            outlined_text(&c, crate::outline::print_outline),
            "outline.hir",
        ),
        Emit::Dot => (outlined_text(&c, crate::outline::print_dot), "dot"),
        Emit::Plan => (
            c.plan.as_ref().map(|p| match &c.datalog {
                // How each Datalog rule runs (multiway or binary joins), then the plan.
                Some(lowered) => {
                    let mut text = String::from("// datalog rules\n");
                    for line in &lowered.rule_plans {
                        text.push_str(&format!("//   {line}\n"));
                    }
                    text + &p.display(horsec_runtime::call_sites(p.target)).to_string()
                }
                None => p.display(horsec_runtime::call_sites(p.target)).to_string(),
            }),
            "plan",
        ),
        Emit::Wgsl => (None, "wgsl"),
    };
    let Some(text) = text else {
        report!(
            "{}: error: the stage produced nothing to print",
            file.display()
        );
        return false;
    };
    write_output(file, out, ext, &text)
}

/// `--emit wgsl`: every kernel's module, to stdout one after another, or with `out` one
/// `<kernel>.wgsl` file per kernel.
pub(super) fn emit_wgsl(file: &Path, c: &Compilation, out: Option<&Path>) -> bool {
    let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
        report!("{}: error: the program was not outlined", file.display());
        return false;
    };
    let modules = match crate::codegen::generate_program(typed, outlined) {
        Ok(modules) => modules,
        Err(e) => {
            report!("{}: error: {e}", file.display());
            return false;
        }
    };
    let Some(dir) = out else {
        let text: String = modules
            .iter()
            .map(|module| format!("// ===== kernel {} =====\n{}", module.name, module.wgsl))
            .collect();
        return write_stdout(&text);
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        report!("{}: error: cannot create: {e}", dir.display());
        return false;
    }
    modules.iter().all(|module| {
        let target = dir.join(format!("{}.wgsl", module.name));
        match std::fs::write(&target, &module.wgsl) {
            Ok(()) => true,
            Err(e) => {
                report!("{}: error: cannot write: {e}", target.display());
                false
            }
        }
    })
}

/// A printer of the outlined program applied to the compilation, when it got that far.
pub(super) fn outlined_text(
    c: &Compilation,
    print: fn(&crate::sema::typed::TypedProgram, &crate::outline::OutlinedProgram) -> String,
) -> Option<String> {
    Some(print(c.typed.as_ref()?, c.outlined.as_ref()?))
}
