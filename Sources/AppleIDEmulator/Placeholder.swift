// The AppleIDEmulator target is laid out per DESIGN.md; its code arrives with the issue that builds it.
