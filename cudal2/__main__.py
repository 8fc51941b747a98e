from cudal2.cli import main

main()
