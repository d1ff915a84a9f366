fn main() {
    std::process::exit(expr::run(std::env::args_os()));
}
