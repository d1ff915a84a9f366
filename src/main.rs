fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `expr 1 + 2`, `expr length abc`, `expr "$x" : '\(.*\)'`: not ours, the system's
    if args.len() > 1 && !expr::cli::is_ours(&args[1..]) {
        // a lone subcommand name typed at a terminal (`expr init`) is POSIX expr's string, which
        // it prints: the person at the terminal is told how to reach the command
        expr::cli::lone_command_hint(&args[1..]);
        expr::cli::typo_hint(&args[1..]);
        std::process::exit(expr::util::coexist::system_expr(&args[1..]));
    }
    std::process::exit(expr::run(args));
}
