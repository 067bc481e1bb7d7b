// Kept to one line: top-level code is main-actor isolated, and C callbacks must never be created here.
SiloCommand.main(CommandLine.arguments)
