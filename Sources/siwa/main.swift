import SiwaCLI

LocalTimeZone.pin()  // before any other thread starts: see LocalTimeZone
await SiwaCommand.start()
