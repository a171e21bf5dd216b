//! Gives the shared library its SONAME so that programs linked against it record
//! `liblodtensor.so.<major>` and keep loading it across compatible releases; lists the CUDA
//! kernel modules for the crate (each kernel file, or each variant of a file that declares
//! variants); with the `cuda-emulator` feature, compiles those kernels as C++ for the emulator.
use std::path::{Path, PathBuf};

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblodtensor.so.{major}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend/cuda/kernels");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("src/backend/cuda/kernels")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    let common = dir.join("common.cuh");
    let mut list = String::from("&[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let file = f.file_name().unwrap().to_str().expect("an ASCII kernel file name");
        for m in modules_of(f) {
            // common.cuh, each header the file includes (after a #line naming it), the variant's
            // macro, the file.
            let headers: String = m
                .includes
                .iter()
                .map(|h| format!("{:?}, include_str!({:?}), ", format!("\n#line 1 \"{h}\"\n"), dir.join(h).display()))
                .collect();
            list += &format!(
                "    ({:?}, concat!(include_str!({:?}), {headers}{:?}, include_str!({:?}))),\n",
                m.name,
                common.display(),
                format!("\n{}#line 1 \"{file}\"\n", m.define()),
                f.display()
            );
        }
    }
    list += "]\n";
    std::fs::write(out.join("kernel_sources.rs"), list).expect("writing kernel_sources.rs");

    if std::env::var_os("CARGO_FEATURE_CUDA_EMULATOR").is_some() {
        emulator(&out, &dir, &files);
    }
}

/// A kernel module: a kernel file, or one variant of it, compiled (and loaded) on its own.
struct Module {
    /// `file.cu`, or `file.cu[NAME=VALUE]` for a variant.
    name: String,
    /// A variant's macro, `(NAME, VALUE)`, defined in front of the file.
    macro_def: Option<(String, String)>,
    /// The headers of kernels/ put in front of the file, after common.cuh.
    includes: Vec<String>,
}

impl Module {
    fn define(&self) -> String {
        self.macro_def.as_ref().map_or(String::new(), |(n, v)| format!("#define {n} {v}\n"))
    }

    fn undefine(&self) -> String {
        self.macro_def.as_ref().map_or(String::new(), |(n, _)| format!("#undef {n}\n"))
    }
}

/// The modules of a kernel file: the file as it is, or, for a file whose first lines say
/// `// lodtensor-variants: NAME=VALUE NAME=VALUE ...`, one per `NAME=VALUE`, that macro defined in
/// front of the file; so that a program compiles only the variants it uses. A file whose first
/// lines say `// lodtensor-includes: HEADER ...` has those headers of kernels/ put in front of it
/// (code that two kernel files share).
fn modules_of(file: &Path) -> Vec<Module> {
    let name = file.file_name().unwrap().to_str().expect("an ASCII kernel file name");
    let text = std::fs::read_to_string(file).expect("a kernel file");
    let directive = |prefix: &str| {
        text.lines().take_while(|l| l.starts_with("//")).find_map(|l| l.strip_prefix(prefix)).map(str::split_whitespace)
    };
    let includes: Vec<String> = directive("// lodtensor-includes:").into_iter().flatten().map(String::from).collect();
    for h in &includes {
        let header = file.with_file_name(h);
        assert!(header.is_file(), "{name} includes {h}, which is not in kernels/");
        println!("cargo:rerun-if-changed={}", header.display());
    }
    match directive("// lodtensor-variants:") {
        Some(list) => list
            .map(|d| {
                let (n, v) = d.split_once('=').expect("a variant is NAME=VALUE");
                let macro_def = Some((n.to_string(), v.to_string()));
                Module { name: format!("{name}[{d}]"), macro_def, includes: includes.clone() }
            })
            .collect(),
        None => vec![Module { name: name.to_string(), macro_def: None, includes }],
    }
}

/// Compiles every kernel file (each variant of it), each in a namespace of its own, with the
/// emulator's host definitions of the CUDA built-ins into one static library.
fn emulator(out: &Path, kernels: &Path, files: &[PathBuf]) {
    let emu = kernels.parent().unwrap().join("emulator");
    println!("cargo:rerun-if-changed={}", emu.display());
    let mut tu = format!("#include {:?}\n", emu.join("host.h").display());
    let modules = files.iter().flat_map(|f| modules_of(f).into_iter().map(move |m| (f, m)));
    for (namespace, (f, m)) in modules.enumerate() {
        let headers: String =
            m.includes.iter().map(|h| format!("#include {:?}\n", kernels.join(h).display())).collect();
        tu += &format!(
            "namespace lodtensor_kernels_{namespace} {{\nstatic const char lodtensor_module[] = {:?};\n\
             {}#include {:?}\n{headers}#include {:?}\n{}}}\n",
            m.name,
            m.define(),
            kernels.join("common.cuh").display(),
            f.display(),
            m.undefine()
        );
    }
    tu += &format!(
        "namespace lodtensor_emulator_selftest {{\nstatic const char lodtensor_module[] = \"selftest.cu\";\n\
         #include {:?}\n#include {:?}\n}}\n",
        kernels.join("common.cuh").display(),
        emu.join("selftest.cu").display()
    );
    tu += &format!("#include {:?}\n", emu.join("launch.cpp").display());
    let src = out.join("emulator.cpp");
    std::fs::write(&src, tu).expect("writing emulator.cpp");
    let obj = out.join("emulator.o");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let run = |cmd: &mut std::process::Command| {
        let status = cmd.status().unwrap_or_else(|e| panic!("cuda-emulator: cannot run {cmd:?}: {e}"));
        assert!(status.success(), "cuda-emulator: {cmd:?} failed");
    };
    // LODTENSOR_EMULATOR_TSAN=1: the race check of launch.cpp, with ThreadSanitizer linked into
    // every binary of the crate.
    println!("cargo:rerun-if-env-changed=LODTENSOR_EMULATOR_TSAN");
    let tsan = std::env::var("LODTENSOR_EMULATOR_TSAN").is_ok_and(|v| v == "1");
    // -U_FORTIFY_SOURCE: a fortified _longjmp refuses a jump to another stack, and the
    // emulator's fibers jump between stacks (launch.cpp).
    run(std::process::Command::new(&cxx)
        .args(["-std=c++20", "-O2", "-U_FORTIFY_SOURCE", "-fPIC", "-pthread", "-Wall", "-Werror", "-c"])
        .args(if tsan { &["-fsanitize=thread", "-g"][..] } else { &[] })
        .arg(&src)
        .arg("-o")
        .arg(&obj));
    let lib = out.join("liblodtensor_cuda_emulator.a");
    let _ = std::fs::remove_file(&lib);
    run(std::process::Command::new("ar").arg("crs").arg(&lib).arg(&obj));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=lodtensor_cuda_emulator");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    if tsan {
        println!("cargo:rustc-link-lib=dylib=tsan");
    }
}
