"""Common given names and surnames in Canada, embedded for two uses.

- The detectors count how many sampled values of a column are known names (a column of
  names is a direct identifier, IPC step 2).
- The demo register draws its synthetic patients from them.

The lists are short on purpose: they only need to make a column of real names stand out
from a column of cities or diagnoses, not to recognize every name.
"""

from __future__ import annotations


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FEMALE_FIRST_NAMES: tuple[str, ...] = _names(
    """
    Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy
    Margaret Sandra Ashley Emily Donna Michelle Carol Amanda Melissa Deborah Stephanie
    Rebecca Laura Sharon Cynthia Kathleen Amy Anna Emma Olivia Sophia Ava Chloe Charlotte
    Amelia Hannah Madison Julie Nathalie Isabelle Sophie Catherine Marie Chantal Sylvie
    Manon Josée Geneviève Mélanie Véronique Louise Hélène Émilie Camille Léa Jade Priya
    Aisha Fatima Mei Ling Mariam Simran Harpreet Gurpreet Jasmine Grace Helen Dorothy Ruth
    Joan Doris Shirley Betty Evelyn Irene Audrey Rose Lucy Zoe Maya Nora Ella Abigail
    Victoria Rachel Heather Kimberly Angela Christine Diane Janet Carmen Maria Ana Lucia
    Sofia Elena Natalia Olga Irina Yasmin Noor Zainab Leila Nadia Ngozi Amara
    """
)

MALE_FIRST_NAMES: tuple[str, ...] = _names(
    """
    James John Robert Michael William David Richard Joseph Thomas Charles Christopher Daniel
    Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kevin Brian George Timothy Ronald
    Jason Ryan Jacob Gary Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin Samuel
    Gregory Alexander Patrick Frank Raymond Jack Dennis Tyler Aaron Noah Liam Lucas Ethan
    Logan Owen Nathan Dylan Connor Pierre Jacques Michel Luc Marc Louis François Sylvain
    Stéphane Yves Guy André Denis Alain Gabriel Félix Olivier Mathieu Étienne Raj Arjun
    Harjit Gurinder Amit Rahul Mohammed Ahmed Ali Omar Hassan Yusuf Wei Jun Hao Ming Minh
    Hung Jin Hiroshi Carlos José Luis Juan Antonio Giuseppe Marco Luca Paolo Ivan Dmitri
    Sergei Kwame Chinedu Emeka Tomasz Piotr
    """
)

LAST_NAMES: tuple[str, ...] = _names(
    """
    Smith Brown Tremblay Martin Roy Wilson MacDonald Gagnon Johnson Taylor Côté Campbell
    Anderson Leblanc Lee Jones White Williams Miller Thompson Gauthier Young Bouchard Scott
    Stewart Fortin Morin Bélanger Pelletier Lavoie Wong Li Chen Wang Zhang Liu Singh Patel
    Nguyen Kim Park Khan Ali Ahmed Hussain Gill Sandhu Dhillon Grewal Sharma Shah Mohamed
    Rodriguez Garcia Silva Santos Ferreira Costa Rossi Russo Esposito Romano Ricci Murphy
    Kelly O'Brien Ryan Walsh Sullivan Clark Lewis Robinson Walker Hall Allen King Wright
    Green Baker Adams Nelson Hill Mitchell Roberts Carter Phillips Evans Turner Parker
    Collins Edwards Morris Murray Ross Reid Fraser Graham Hamilton Ferguson Robertson
    Morrison Cameron Gordon Bell Watson Wood Hughes Cooper Ward Cox Richardson Bennett Gray
    Harris Jackson Lévesque Girard Bergeron Caron Gagné Ouellet Poirier Simard Boucher
    Lefebvre Dubois Lapointe Mercier Richard Fournier Thibault Paquette Leclerc Beaulieu
    Nadeau Cloutier Demers Hébert Landry Arsenault Cormier Doucet Thériault Chan Ho Lam Wu
    Huang Yang Lin Tran Pham Le Choi Hassan Ibrahim Abdi Rahman Brar Sidhu Bains Malik
    Qureshi Iqbal Haddad Khoury Nasser Kowalski Nowak Petrov Ivanov Schmidt Müller Schneider
    Fischer Weber Wagner Becker Hoffmann Novak Horvat Papadopoulos Yilmaz Okafor Mensah Osei
    Adeyemi
    """
)

FIRST_NAMES: tuple[str, ...] = FEMALE_FIRST_NAMES + MALE_FIRST_NAMES
