import SiwaCLI

await SiwaCommand.start()
