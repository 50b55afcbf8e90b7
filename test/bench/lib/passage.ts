/**
 * The English passage the speech benchmarks read: prose with times, dates, numbers, money,
 * abbreviations and punctuation, so the text front end has real work. Sliced to the length a
 * benchmark wants.
 */
export const HARBOUR_PASSAGE =
  "The harbour was quiet when the ferry came in at 6:45 pm on June 3rd, 2024. " +
  "Forty-two passengers stepped onto the pier, and a porter charged $3.50 for each bag. " +
  "Dr. Patel, who had crossed the strait more than 1,200 times, said the weather looked unusually calm. " +
  "Gulls circled above the fish market while the lamps along the promenade flickered on, one by one. " +
  "Somewhere a radio played an old song about leaving home; nobody seemed to mind. " +
  "By nine o'clock the last taxi had gone, the cafés had closed, and only the lighthouse kept turning. " +
  "Tomorrow, the timetable promised, the first boat would leave at 7:15 sharp, whatever the tide. " +
  "The harbour master wrote it all down in a ledger older than anyone could remember, page after page. " +
  "Then she locked the office, checked the moorings twice, and walked home along the wet cobbles. " +
  "Her cat was waiting by the door, as it had every evening for eleven years, and it followed her inside without a sound. " +
  "Outside, the sea kept its own slow time, patient and grey.";
