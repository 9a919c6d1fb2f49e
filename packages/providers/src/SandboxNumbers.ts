/** The sandbox network's magic recipients: what each one makes the simulated network do (SandboxProvider). */
export const MAGIC = {
  failsPermanently: "+15005550001",
  failsTwiceThenSucceeds: "+15005550002",
  staysAtSent: "+15005550003"
} as const

/** Magic numbers count as verified recipients. */
export const isMagicNumber = (phone: string) => (Object.values(MAGIC) as Array<string>).includes(phone)
