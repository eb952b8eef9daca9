fn main() -> std::process::ExitCode {
    moot::cli::main()
}
