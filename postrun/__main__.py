from postrun.cli import main

main()
